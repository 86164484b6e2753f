"""Explicit backpressure: pause the assigned partitions while there is pressure, resume after.

Pressure is a reason (too many events waiting, a SYSTEMIC failure, a schema fence). A paused
partition is still polled (the consumer stays in the group) but hands out nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import Protocol

from searchsync.observability.metrics import Metrics
from searchsync.types import TopicPartition

__all__ = ["Backpressure", "PauseControl"]

log = logging.getLogger(__name__)


class PauseControl(Protocol):
    async def pause(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def resume(self, partitions: Sequence[TopicPartition]) -> None: ...


class Backpressure:
    """Which partitions are paused, and the pause/resume calls that keep it so."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self.paused: set[TopicPartition] = set()

    async def adjust(
        self, intake: PauseControl, assigned: Collection[TopicPartition], reason: str | None
    ) -> None:
        """Pause every assigned partition while `reason` is set; resume them once it is None."""
        if reason is not None:
            to_pause = sorted(set(assigned) - self.paused)
            if to_pause:
                log.warning("pausing intake", extra={"reason": reason, "partitions": len(to_pause)})
                await intake.pause(to_pause)
                self.paused.update(to_pause)
        elif self.paused:
            to_resume = sorted(self.paused & set(assigned))
            await intake.resume(to_resume)
            self.paused.clear()
            log.info("resuming intake", extra={"partitions": len(to_resume)})
        self._metrics.set_paused(len(self.paused))

    def forget(self, tp: TopicPartition) -> None:
        self.paused.discard(tp)
