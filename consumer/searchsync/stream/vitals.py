"""What the pipeline says to its intake and about itself: pause/resume on `WorkState.pressure`,
readiness for ``/healthz``, and gauges, each O(1) or O(partitions)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Protocol

from searchsync.kafka.intake import RawMessage
from searchsync.observability.metrics import Metrics
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.fence import SchemaFence
from searchsync.stream.work_state import WorkState
from searchsync.types import TopicPartition

log = logging.getLogger(__name__)

STALL_AFTER_S = 120.0  # pending work and no progress for this long: /healthz says not ready


class IntakePort(Protocol):
    """The part of `KafkaIntake` the pipeline uses (faked in unit tests)."""

    async def consume(self, max_messages: int, timeout_s: float) -> list[RawMessage]: ...

    async def commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, bool]: ...

    async def pause(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def resume(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def high_watermarks(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]: ...


class Vitals:
    def __init__(
        self, *, work: WorkState, dead_letters: DeadLetters, fence: SchemaFence, metrics: Metrics
    ) -> None:
        self._work = work
        self._dead = dead_letters
        self._fence = fence
        self._metrics = metrics
        self._paused: set[TopicPartition] = set()

    async def adjust_pause(self, intake: IntakePort) -> None:
        """Pause every assigned partition while there is pressure; resume once it is gone."""
        reason = self._work.pressure()
        assigned = self._work.assigned
        if reason is not None:
            to_pause = sorted(assigned - self._paused)
            if to_pause:
                log.warning("pausing intake", extra={"reason": reason, "partitions": len(to_pause)})
                await intake.pause(to_pause)
                self._paused.update(to_pause)
        elif self._paused:
            to_resume = sorted(self._paused & assigned)
            await intake.resume(to_resume)
            self._paused.clear()
            log.info("resuming intake", extra={"partitions": len(to_resume)})
        self._metrics.set_paused(len(self._paused))

    def forget(self, tp: TopicPartition) -> None:
        self._paused.discard(tp)
        self._metrics.forget_partition(*tp)

    async def report_lag(self, intake: IntakePort) -> None:
        assigned = self._work.assigned
        if not assigned:
            return
        ledger = self._work.ledger
        highs = await intake.high_watermarks(sorted(assigned))
        for tp, high in highs.items():
            position = ledger.committable(tp)
            if position is not None:
                self._metrics.set_lag(tp[0], tp[1], max(0, high - position))

    def report_gauges(self) -> None:
        self._metrics.set_pending(self._work.ledger.total_pending())
        self._metrics.set_processing(self._work.in_flight())
        oldest = self._work.oldest_timestamp_ms()
        age = 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)
        self._metrics.set_oldest_pending_age(age)

    def health(self) -> tuple[bool, list[str]]:
        """Ready: partitions assigned, not stalled, no fatal error."""
        reasons: list[str] = []
        if self._dead.fatal is not None:
            reasons.append(f"fatal: {self._dead.fatal}")
        if not self._work.assigned:
            reasons.append("no partitions assigned")
        if self._work.degraded is not None:
            reasons.append(f"writes failing systemically ({self._work.degraded}); intake paused")
        reasons.extend(self._fence.reasons())
        if self._work.stalled(STALL_AFTER_S):
            reasons.append(f"no progress for more than {STALL_AFTER_S:.0f}s with work pending")
        return (not reasons, reasons)
