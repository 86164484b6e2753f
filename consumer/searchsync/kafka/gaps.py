"""History lost before it was read: a partition whose committed offset lies below the log start, or
whose lineage does not match (a re-created topic, an offset above the log end: `kafka.lineage`), is
BLOCKED (kept, never fetched) and said once on /healthz, in ``searchsync_partition_blocked`` and in
the log (docs/design.md, invariant 14). Way out: `searchsync rebuild`, then ``offsets reset --to
earliest --accept-gap``."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from searchsync.kafka.lineage import LineageCheck, LineageMismatch, mismatch
from searchsync.observability.metrics import Metrics
from searchsync.types import TopicPartition

log = logging.getLogger(__name__)

RECONCILE: Final = "reconcile with `searchsync rebuild` (or a full repair rotation)"
RECOVERY: Final = (
    f"{RECONCILE}, then acknowledge the gap "
    "with `searchsync offsets reset --to earliest --accept-gap --topic T --partition P` "
    "while the group is stopped"
)


@dataclass(frozen=True, slots=True)
class HistoryGap:
    """Records `committed` .. `log_start` - 1 of one partition were deleted unread."""

    topic: str
    partition: int
    committed: int
    log_start: int

    @property
    def missing(self) -> int:
        return self.log_start - self.committed

    def describe(self) -> str:
        return (
            f"{self.topic}[{self.partition}] blocked: committed offset {self.committed} is below "
            f"the log start {self.log_start}; {self.missing} record(s) were deleted before "
            "they were read (retention or delete-records)"
        )


Blocked = HistoryGap | LineageMismatch
"""Why a partition is not read."""


class GapBoard:
    """The partitions this member holds but will not read; thread-safe."""

    def __init__(self, observer: Metrics | None = None) -> None:
        self._observer = observer
        self._gaps: dict[TopicPartition, Blocked] = {}
        self._lock = threading.Lock()

    def block(self, gap: Blocked) -> None:
        tp = (gap.topic, gap.partition)
        with self._lock:
            known = self._gaps.get(tp) == gap
            self._gaps[tp] = gap
        if not known:
            log.error(
                "%s; %s",
                gap.describe(),
                RECOVERY,
                extra={"topic": gap.topic, "partition": gap.partition, "missing": gap.missing},
            )
        if self._observer is not None:
            lineage = isinstance(gap, LineageMismatch)
            self._observer.set_blocked(gap.topic, gap.partition, gap.missing, lineage=lineage)

    def release(self, partitions: Sequence[TopicPartition]) -> None:
        """`partitions` left this member: their new owner says what blocks them."""
        with self._lock:
            gone = [tp for tp in partitions if self._gaps.pop(tp, None) is not None]
        if self._observer is not None:
            for topic, partition in gone:
                self._observer.set_blocked(topic, partition, None)

    def blocked(self) -> list[Blocked]:
        with self._lock:
            return sorted(self._gaps.values(), key=lambda g: (g.topic, g.partition))

    def reasons(self) -> list[str]:
        """One /healthz reason per blocked partition, with the way out."""
        return [f"{g.describe()}; {RECOVERY}" for g in self.blocked()]


class GapGuard:
    """The intake's side of the gaps; every method runs on the consumer thread."""

    def __init__(
        self,
        board: GapBoard,
        config: Mapping[str, Any],
        *,
        fresh_start: str,
        timeout_s: float,
        lineage: LineageCheck | None = None,
    ) -> None:
        self.board = board
        self._lineage = lineage
        self._fresh_start = fresh_start
        self._fresh = OFFSET_BEGINNING if fresh_start == "earliest" else OFFSET_END
        self._timeout_s = timeout_s
        self._cooperative = config.get("partition.assignment.strategy") == "cooperative-sticky"
        self._explicit = config.get("auto.offset.reset") == "error"
        self._unassigned: set[TopicPartition] = set()  # blocked on assignment, never assigned

    def admit(self, consumer: Any, tps: list[TopicPartition]) -> list[TopicPartition]:
        """Assign `tps` where they start, except those with a gap; the ones assigned. Without a gap
        or explicit fresh start librdkafka's own assignment stays."""
        try:
            starts, gaps = self._starts(consumer, tps)
        except KafkaException as exc:  # the fetch's out-of-range error still catches a gap
            log.warning("committed offsets unreadable on assignment", extra={"error": str(exc)})
            return tps
        for gap in gaps:
            self.board.block(gap)
            self._unassigned.add((gap.topic, gap.partition))
        fresh = any(tp.offset < 0 for tp in starts)
        if gaps or (fresh and self._explicit):
            (consumer.incremental_assign if self._cooperative else consumer.assign)(starts)
        return [(tp.topic, tp.partition) for tp in starts]

    def _starts(
        self, consumer: Any, partitions: Sequence[TopicPartition]
    ) -> tuple[list[KafkaTopicPartition], list[Blocked]]:
        """Where each partition starts (`fresh_start` without a committed offset), and why those
        that must not are blocked. `KafkaException` when offsets cannot be read in time."""
        asked = [KafkaTopicPartition(t, p) for t, p in partitions]
        ids = self._topic_ids([t for t, _p in partitions])
        starts: list[KafkaTopicPartition] = []
        gaps: list[Blocked] = []
        for tp in consumer.committed(asked, timeout=self._timeout_s):
            if tp.error is not None:
                raise KafkaException(tp.error)
            committed = tp.offset if tp.offset >= 0 else None
            low, high = consumer.get_watermark_offsets(
                KafkaTopicPartition(tp.topic, tp.partition), timeout=self._timeout_s, cached=False
            )
            recorded, current = ids.get(tp.topic, (None, None))
            if found := mismatch(tp.topic, tp.partition, committed, high, recorded, current):
                gaps.append(found)
            elif committed is None:
                starts.append(KafkaTopicPartition(tp.topic, tp.partition, self._fresh))
            elif committed < low:
                gaps.append(HistoryGap(tp.topic, tp.partition, committed, low))
            else:
                starts.append(KafkaTopicPartition(tp.topic, tp.partition, committed))
        return starts, gaps

    def _topic_ids(self, topics: list[str]) -> dict[str, tuple[str | None, str | None]]:
        """topic -> (recorded id, current id); empty, said at WARNING, when unreadable."""
        if self._lineage is None:
            return {}
        try:
            return self._lineage.ids(topics)
        except Exception as exc:  # the offsets' own checks still hold
            log.warning(
                "topic lineage unreadable on assignment: a re-created topic goes unnoticed",
                extra={"error": str(exc) or type(exc).__name__},
            )
            return {}

    def out_of_range(self, consumer: Any, m: Any) -> None:
        """No valid position: below the log start or above the log end the partition is blocked;
        without a committed offset it starts at `fresh_start`."""
        topic, partition, offset = m.topic(), m.partition(), m.offset()
        if topic is None or partition is None:
            return
        tp = KafkaTopicPartition(topic, partition)
        low, high = consumer.get_watermark_offsets(tp, timeout=self._timeout_s)
        if offset is not None and 0 <= offset < low:
            self.board.block(HistoryGap(topic, partition, offset, low))
            return
        if offset is not None and offset > high >= 0:
            self.board.block(LineageMismatch(topic, partition, offset, high))
            return
        log.info("no valid offset: starting %s[%d] at the %s", topic, partition, self._fresh_start)
        consumer.seek(KafkaTopicPartition(topic, partition, self._fresh))

    def split(self, partitions: Sequence[Any]) -> tuple[list[TopicPartition], bool]:
        """The leaving partitions this member reads; True if some it never read go too."""
        tps = [(tp.topic, tp.partition) for tp in partitions]
        self.board.release(tps)
        never = self._unassigned.intersection(tps)
        self._unassigned -= never
        return [tp for tp in tps if tp not in never], bool(never)

    def unassign(self, consumer: Any, held: list[TopicPartition], never: bool) -> None:
        """librdkafka refuses to unassign what it never assigned: with such a partition in the
        revoke, the rest is unassigned here."""
        if not never:
            return
        if self._cooperative:
            consumer.incremental_unassign([KafkaTopicPartition(t, p) for t, p in held])
        else:
            consumer.unassign()
