"""Running batches: take ready works, process them, settle every verdict, record state.

At most `max_concurrent` batches run at once. A batch slot is free as soon as its verdicts are
settled; the projection-state updates go to the `StateBuffer`, which the pipeline writes on its
timer (`searchsync.stream.state_buffer`). The number of works in flight per partition is kept so
that a revoke can wait for exactly the works of its partitions.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection

from searchsync.errors import ErrorCode
from searchsync.mysql.state import StateUpdate
from searchsync.stream.coalesce import Coalescer, Work
from searchsync.stream.processor import Processor
from searchsync.stream.settle import Settler, Tally
from searchsync.stream.state_buffer import StateBuffer
from searchsync.stream.verdict import Result, Verdict
from searchsync.types import TopicPartition

__all__ = ["BATCH_SUMMARY_MESSAGE", "Batches"]

BATCH_SUMMARY_MESSAGE = "batch settled"

log = logging.getLogger(__name__)


class Batches:
    """The batch tasks, and `done`: set whenever a batch settled its verdicts."""

    def __init__(
        self,
        *,
        processor: Processor,
        settler: Settler,
        state: StateBuffer,
        coalescer: Coalescer,
        max_batch_works: int,
        max_concurrent: int,
        clock: Callable[[], float],
    ) -> None:
        self._processor = processor
        self._settler = settler
        self._state = state
        self._coalescer = coalescer
        self._max_works = max_batch_works
        self._max_concurrent = max_concurrent
        self._clock = clock
        self._running: set[asyncio.Task[None]] = set()
        self._works_by_tp: dict[TopicPartition, int] = {}
        self._settled = asyncio.Event()
        self.done = asyncio.Event()

    def tasks(self) -> set[asyncio.Task[None]]:
        """Every batch still running, and the state flush."""
        return self._running | self._state.tasks()

    def dispatch(self) -> None:
        """Start batches of ready works while a slot is free."""
        while len(self._running) < self._max_concurrent:
            works = self._coalescer.take_ready(self._max_works)
            if not works:
                return
            for work in works:
                for tp in _partitions(work):
                    self._works_by_tp[tp] = self._works_by_tp.get(tp, 0) + 1
            task = asyncio.create_task(self._run(works))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def wait_for(self, partitions: Collection[TopicPartition], deadline: float) -> None:
        """Wait until no work of `partitions` is in flight, or the (clock) deadline passes."""
        while any(self._works_by_tp.get(tp, 0) for tp in partitions) and self._clock() < deadline:
            self._settled.clear()
            try:
                await asyncio.wait_for(self._settled.wait(), max(0.0, deadline - self._clock()))
            except TimeoutError:
                return

    async def _run(self, works: list[Work]) -> None:
        started = self._clock()
        try:
            verdicts = await self._processor.process(works)
        except Exception as exc:  # a bug in a step: each work failed on its own (INTERNAL)
            log.exception("batch failed unexpectedly; its works will be retried")
            message = f"{type(exc).__name__}: {exc}"
            verdicts = [Verdict(w, Result.FAILED, ErrorCode.INTERNAL, message) for w in works]
        updates: list[StateUpdate] = []
        tally: Tally = {}
        settle = self._settler.settle
        for verdict in verdicts:
            update = settle(verdict, tally)
            if update is not None:
                updates.append(update)
        self._settler.report(tally)
        if tally and log.isEnabledFor(logging.INFO):
            _log_summary(works, tally, self._clock() - started)
        for work in works:
            for tp in _partitions(work):
                left = self._works_by_tp.get(tp, 0) - 1
                if left > 0:
                    self._works_by_tp[tp] = left
                else:
                    self._works_by_tp.pop(tp, None)
        self._state.add(updates)
        self._settled.set()
        self.done.set()


def _log_summary(works: list[Work], tally: Tally, seconds: float) -> None:
    """The one INFO line for a batch's successes (each failure has its own line)."""
    results: dict[str, int] = {}
    for (_, result), n in tally.items():
        results[result] = results.get(result, 0) + n
    log.info(
        BATCH_SUMMARY_MESSAGE,
        extra={
            "works": len(works),
            "events": sum(len(w.events) for w in works),
            "finished": sum(results.values()),
            "results": results,
            "aggregate_types": sorted({t for t, _ in tally}),
            "seconds": round(seconds, 4),
        },
    )


def _partitions(work: Work) -> set[TopicPartition]:
    return {(p.topic, p.partition) for p in work.positions}
