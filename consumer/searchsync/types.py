"""Value types shared by every pipeline step."""

from __future__ import annotations

import enum
from typing import Final, NamedTuple, TypeAlias

TopicPartition: TypeAlias = tuple[str, int]
"""A Kafka partition as ``(topic, partition)``: the unit of assignment, pausing and committing."""


BucketCursor: TypeAlias = tuple[int, str]
"""Where a page of a bucket key range resumes: the bucket key and the id of the last entry."""

HASH_SPACE: Final = 2**32
"""The repair wheel's bucket keys (``sync_hash``) lie in ``0 .. HASH_SPACE - 1``."""


class Operation(enum.StrEnum):
    """What an outbox event asks for. All three re-read the truth; the row decides the document."""

    UPSERT = "UPSERT"
    TOMBSTONE = "TOMBSTONE"
    REBUILD = "REBUILD"


class RawMessage(NamedTuple):
    """A consumed message as plain data, and the position it finishes: committing it means
    committing `offset + 1` (a position alone: no key, value or timestamp). Like `Key` and
    `ThinEvent` a `NamedTuple` for speed (built per event): never compare one with a plain tuple."""

    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    value: bytes | None = None
    timestamp_ms: int | None = None


class Key(NamedTuple):
    """The identity of an aggregate: the unit of ordering and of coalescing."""

    aggregate_type: str
    aggregate_id: str


class ThinEvent(NamedTuple):
    """The event the application writes to its outbox; it says *that* something changed."""

    event_id: str
    aggregate_type: str
    aggregate_id: str
    operation: Operation
    source_revision: int

    @property
    def key(self) -> Key:
        return Key(self.aggregate_type, self.aggregate_id)
