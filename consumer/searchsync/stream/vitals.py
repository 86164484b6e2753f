"""What the pipeline says about itself: readiness for ``/healthz`` and the gauges (pending,
processing, the oldest pending event's age, the lag per partition). Every gauge is O(1) or
O(partitions), never a scan of the pending events."""

from __future__ import annotations

import time
from collections.abc import Collection

from searchsync.observability.metrics import Metrics
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.fence import SchemaFence
from searchsync.stream.ports import IntakePort
from searchsync.stream.positions import Positions
from searchsync.stream.settle import Settler
from searchsync.types import TopicPartition

__all__ = ["STALL_AFTER_S", "Vitals"]

STALL_AFTER_S = 120.0  # pending work and no progress for this long: /healthz says not ready


class Vitals:
    def __init__(
        self,
        *,
        assigned: Collection[TopicPartition],
        positions: Positions,
        coalescer: Coalescer,
        settler: Settler,
        dead_letters: DeadLetters,
        fence: SchemaFence | None,
        metrics: Metrics,
    ) -> None:
        """`assigned` is the live set of assigned partitions (read, never changed, here)."""
        self._assigned = assigned
        self._positions = positions
        self._coalescer = coalescer
        self._settler = settler
        self._dead = dead_letters
        self._fence = fence
        self._metrics = metrics

    async def report_lag(self, intake: IntakePort) -> None:
        if not self._assigned:
            return
        ledger = self._positions.ledger
        highs = await intake.high_watermarks(sorted(self._assigned))
        for tp, high in highs.items():
            position = ledger.committable(tp)
            if position is not None:
                self._metrics.set_lag(tp[0], tp[1], max(0, high - position))

    def report_gauges(self) -> None:
        self._metrics.set_pending(self._positions.ledger.total_pending())
        self._metrics.set_processing(self._coalescer.in_flight())
        oldest = self._positions.oldest_timestamp_ms()
        age = 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)
        self._metrics.set_oldest_pending_age(age)

    def health(self) -> tuple[bool, list[str]]:
        """Ready: partitions assigned, not stalled, no fatal error."""
        reasons: list[str] = []
        if self._dead.fatal is not None:
            reasons.append(f"fatal: {self._dead.fatal}")
        if not self._assigned:
            reasons.append("no partitions assigned")
        if self._settler.degraded is not None:
            reasons.append(f"writes failing systemically ({self._settler.degraded}); intake paused")
        if self._fence is not None:
            reasons.extend(self._fence.reasons())
        if self._positions.stalled(STALL_AFTER_S):
            reasons.append(f"no progress for more than {STALL_AFTER_S:.0f}s with work pending")
        return (not reasons, reasons)
