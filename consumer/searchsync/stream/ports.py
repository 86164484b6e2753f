"""The ports the pipeline drives: its intake (Kafka) and its dead-letter queue.

`searchsync.kafka.intake.KafkaIntake` and `searchsync.dlq.record.DlqProducer` implement them;
tests/unit/pipeline_fakes.py has in-memory ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from searchsync.dlq.record import DlqRecord
from searchsync.kafka.intake import RawMessage
from searchsync.types import TopicPartition

__all__ = ["DlqPort", "IntakePort"]


class IntakePort(Protocol):
    """The part of `searchsync.kafka.intake.KafkaIntake` the pipeline uses (faked in unit tests)."""

    async def consume(self, max_messages: int, timeout_s: float) -> list[RawMessage]: ...

    async def commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, bool]: ...

    async def pause(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def resume(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def high_watermarks(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]: ...


class DlqPort(Protocol):
    async def send(self, record: DlqRecord, key: bytes | None) -> None: ...
