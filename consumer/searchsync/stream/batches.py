"""Running batches: take ready works, process them, settle each in the `WorkState` (finish, retry,
dead-letter) once, and say so: metrics, log lines, dead letters. At most `MAX_CONCURRENT` batches
run; projection-state outcomes go to the `StateBuffer`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection

from searchsync.dlq.record import DlqBudget
from searchsync.errors import ErrorCode
from searchsync.mysql.state_buffer import StateBuffer
from searchsync.observability.metrics import Metrics
from searchsync.search.sink import OutcomeKind
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.processor import Processor
from searchsync.stream.work import Work
from searchsync.stream.work_state import Settled, WorkState
from searchsync.types import TopicPartition

BATCH_SUMMARY_MESSAGE = "batch settled"
MAX_CONCURRENT = 2  # batches in flight at once

log = logging.getLogger(__name__)


class Batches:
    """The batch tasks; `done` is set whenever a batch settled its works."""

    def __init__(
        self,
        *,
        state: WorkState,
        processor: Processor,
        dead_letters: DeadLetters,
        budget: DlqBudget,
        outcomes: StateBuffer,
        metrics: Metrics,
        max_batch_works: int,
        clock: Callable[[], float],
    ) -> None:
        self._state = state
        self._processor = processor
        self._dead = dead_letters
        self._budget = budget
        self._outcomes = outcomes
        self._metrics = metrics
        self._max_works = max_batch_works
        self._clock = clock
        self._running: set[asyncio.Task[None]] = set()
        self._working: list[list[Work]] = []  # the works of each running batch
        self._revision_lags: dict[str, int] = {}  # aggregate type -> lag, set once per batch
        self._debug = False  # per-event success lines for the batch being settled
        self._settled = asyncio.Event()  # `wait_for`'s own: clearing it never hides `done`
        self.done = asyncio.Event()  # the run loop's

    def tasks(self) -> set[asyncio.Task[None]]:
        return self._running | self._outcomes.tasks()

    def dispatch(self) -> None:
        while len(self._running) < MAX_CONCURRENT:
            works = self._state.take(self._max_works)
            if not works:
                return
            self._working.append(works)
            task = asyncio.create_task(self._run(works))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def wait_for(self, partitions: Collection[TopicPartition], deadline: float) -> None:
        """Wait until no work of `partitions` is in flight, or the deadline passes."""
        while self._busy(partitions) and self._clock() < deadline:
            self._settled.clear()
            try:
                await asyncio.wait_for(self._settled.wait(), max(0.0, deadline - self._clock()))
            except TimeoutError:
                return

    def _busy(self, partitions: Collection[TopicPartition]) -> bool:
        return any(
            (p.topic, p.partition) in partitions
            for works in self._working
            for work in works
            for p in work.positions
        )

    async def _run(self, works: list[Work]) -> None:
        started = self._clock()
        try:
            await self._processor.process(works)
        except Exception as exc:  # a bug in a step: each work failed on its own (INTERNAL)
            log.exception("batch failed unexpectedly; its works will be retried")
            message = f"{type(exc).__name__}: {exc}"
            for work in works:
                work.fail(ErrorCode.INTERNAL, message)
        tally: Counter[tuple[str, str]] = Counter()  # (aggregate type, result) -> events
        stamps: list[int] = []
        now_ms = time.time() * 1000  # when this batch's works finished
        self._debug = log.isEnabledFor(logging.DEBUG)
        for work in works:
            if work.kind is None:  # a step left it without an outcome: never finish it unwritten
                work.fail(ErrorCode.INTERNAL, "the processor gave the work no outcome")
            self._settle(work, tally, stamps)
        self._working.remove(works)
        visible = self._metrics.commit_to_searchable
        for stamp in stamps:
            visible((now_ms - stamp) / 1000)
        for (aggregate_type, result), n in tally.items():
            self._metrics.event_outcome(aggregate_type, result, n)
        for aggregate_type, lag in self._revision_lags.items():
            self._metrics.revision_lag(aggregate_type, lag)
        self._revision_lags.clear()
        if tally and log.isEnabledFor(logging.INFO):  # the one INFO line for the successes
            results: dict[str, int] = {}
            for (_, result), n in tally.items():
                results[result] = results.get(result, 0) + n
            summary = {
                "works": len(works),
                "events": sum(len(w.events) for w in works),
                "finished": sum(results.values()),
                "results": results,
                "aggregate_types": sorted({t for t, _ in tally}),
                "seconds": round(self._clock() - started, 4),
            }
            log.info(BATCH_SUMMARY_MESSAGE, extra=summary)
        self._outcomes.end_batch()
        self._settled.set()
        self.done.set()

    def _settle(self, work: Work, tally: Counter[tuple[str, str]], stamps: list[int]) -> None:
        code, said = work.code, work.message  # `settle` makes the message the dead letter's
        settled = self._state.settle(work, stamps)
        if settled is Settled.FINISHED:
            self._finished(work, tally)
            return
        if settled is Settled.DROPPED:
            return
        assert code is not None
        key, message = work.key, work.message or code.value
        if settled.counted:  # outbox_retry_total and one "retry" line per event
            self._metrics.retry(key.aggregate_type, code)
            said = said or code.value
            for event, pos in zip(work.events, work.positions, strict=True):
                work.log_outcome(log, event, pos, "retry", code, said)
        if settled is Settled.SYSTEMIC:
            return
        if settled is not Settled.RETRY:  # dead-lettered; its positions finish on the ack
            if code is ErrorCode.REVISION_REGRESSION:
                self._metrics.revision_regression(key.aggregate_type)
            self._dead.send(work.positions, code, message, work)
        self._outcomes.failed(
            key.aggregate_type, key.aggregate_id, work.max_revision, code, message
        )

    def _finished(self, work: Work, tally: Counter[tuple[str, str]]) -> None:
        doc, kind = work.document, work.kind
        aggregate_type, events = work.key.aggregate_type, work.events
        assert kind is not None
        result = kind.value.lower()  # applied, already_applied (the event's result)
        tally[(aggregate_type, result)] += 1
        if doc is None or len(events) > 1:
            tally[(aggregate_type, "superseded")] += len(events) - 1
        self._budget.record_success()
        if doc is None:  # an event that only fans out: its job is recorded (`Processor`)
            return
        if self._state.recovery is not None:
            (was, released), self._state.recovery = self._state.recovery, None
            log.info(
                "writes succeed again; resuming intake",
                extra={"was": was, "retries_released": released},
            )
        if self._debug:  # per-event success lines (docs/consumer.md "Logs")
            newest = work.newest
            for event, pos in zip(events, work.positions, strict=True):
                said = result if event is newest else "superseded"
                work.log_outcome(log, event, pos, said)
        if doc.is_deleted and kind is OutcomeKind.APPLIED:
            self._metrics.tombstone()
        max_revision = work.max_revision
        # the gauge is "last observed": set once per batch from the batch's last work (`_run`)
        self._revision_lags[aggregate_type] = max(0, max_revision - doc.source_revision)
        self._outcomes.applied(
            aggregate_type,
            work.key.aggregate_id,
            max(max_revision, work.loaded_revision or 0),
            doc.source_revision,
            work.schema_version,
            doc.projection_hash,
        )
