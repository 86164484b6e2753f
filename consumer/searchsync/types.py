"""Value types shared by every pipeline step."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TypeAlias

TopicPartition: TypeAlias = tuple[str, int]
"""A Kafka partition as ``(topic, partition)``: the unit of assignment, pausing and committing."""


BucketCursor: TypeAlias = tuple[int, str]
"""Where a page of a bucket key range resumes: the bucket key and the id of the last entry."""


class Operation(enum.StrEnum):
    """What an outbox event asks for. All three re-read the truth; the row decides the document."""

    UPSERT = "UPSERT"
    TOMBSTONE = "TOMBSTONE"
    REBUILD = "REBUILD"


@dataclass(frozen=True, slots=True)
class Position:
    """Where a message came from. Committing it means committing `offset + 1`."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Key:
    """The identity of an aggregate: the unit of ordering and of coalescing."""

    aggregate_type: str
    aggregate_id: str


@dataclass(frozen=True, slots=True)
class ThinEvent:
    """The event the application writes to its outbox; it says *that* something changed."""

    event_id: str
    aggregate_type: str
    aggregate_id: str
    operation: Operation
    source_revision: int

    @property
    def key(self) -> Key:
        return Key(self.aggregate_type, self.aggregate_id)
