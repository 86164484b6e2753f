"""Running batches: take ready works, process them, and apply each verdict's `decide` (finish,
retry, dead-letter) to the `WorkState`, once. At most `max_concurrent` batches run; projection-state
outcomes go to the `StateBuffer`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Collection

from searchsync.errors import ErrorCode
from searchsync.mysql.state_buffer import StateBuffer
from searchsync.observability.metrics import Metrics
from searchsync.search.sink import OutcomeKind
from searchsync.stream.coalesce import Work
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.verdict import (
    OUTAGE_CODES,
    Action,
    Verdict,
    decide,
    log_outcome,
)
from searchsync.stream.work_state import WorkState
from searchsync.types import TopicPartition

BATCH_SUMMARY_MESSAGE = "batch settled"
MAX_CONCURRENT = 2  # batches in flight at once

Tally = Counter[tuple[str, str]]
"""Finished events of one batch: (aggregate type, result) -> count."""

log = logging.getLogger(__name__)


class Batches:
    """The batch tasks; `done` is set whenever a batch applied its verdicts."""

    def __init__(
        self,
        *,
        state: WorkState,
        processor: Processor,
        dead_letters: DeadLetters,
        outcomes: StateBuffer,
        metrics: Metrics,
        retry: RetryPolicy,
        max_batch_works: int,
        clock: Callable[[], float],
    ) -> None:
        self._state = state
        self._processor = processor
        self._dead = dead_letters
        self._outcomes = outcomes
        self._metrics = metrics
        self._retry = retry
        self._max_works = max_batch_works
        self._clock = clock
        self._running: set[asyncio.Task[None]] = set()
        self._working: list[list[Work]] = []  # the works of each running batch
        self._revision_lags: dict[str, int] = {}  # aggregate type -> lag, set once per batch
        self._now_ms = 0.0  # the wall clock (ms) when the batch being applied finished
        self._debug = False  # per-event success lines for the batch being applied
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
            verdicts = await self._processor.process(works)
        except Exception as exc:  # a bug in a step: each work failed on its own (INTERNAL)
            log.exception("batch failed unexpectedly; its works will be retried")
            message = f"{type(exc).__name__}: {exc}"
            failed = OutcomeKind.FAILED
            verdicts = [Verdict(w, failed, ErrorCode.INTERNAL, message) for w in works]
        tally: Tally = Counter()
        self._now_ms = time.time() * 1000  # when this batch's works finished
        self._debug = log.isEnabledFor(logging.DEBUG)
        for verdict in verdicts:
            self._apply(verdict, tally)
        self._working.remove(works)
        self._report(tally)
        if tally and log.isEnabledFor(logging.INFO):
            _log_summary(works, tally, self._clock() - started)
        self._outcomes.end_batch()
        self._settled.set()
        self.done.set()

    def _apply(self, verdict: Verdict, tally: Tally) -> None:
        work, state = verdict.work, self._state
        if not state.owned(work):
            # Every partition of the work was revoked while it ran: its offsets belong to the new
            # owner, who re-reads them. No retry, no dead letter, no budget spent here.
            state.drop(work)
            return
        if verdict.code is None:  # what `decide` says of every verdict without a code
            self._finished(verdict, tally)
            return
        decision = decide(
            verdict,
            systemic_spent=state.systemic_spent(work.key),
            max_attempts=self._retry.max_attempts,
        )
        if decision.action is Action.FINISH:
            self._finished(verdict, tally)
            return
        code, message = decision.code, decision.message or ""
        assert code is not None
        if decision.counted:  # outbox_retry_total and one "retry" line per event
            self._metrics.retry(work.key.aggregate_type, code)
            said = verdict.message or code.value
            for event, pos in work.events:
                log_outcome(log, event, pos, verdict, "retry", work.attempts, code, said)
        key = work.key
        if decision.action is Action.RETRY:
            delay = self._retry.delay(decision.attempt)
            if decision.cap is not None:
                delay = min(delay, decision.cap)
            state.retry(work, delay, code, systemic=decision.systemic)
            if decision.systemic:
                return
        else:
            if code is ErrorCode.REVISION_REGRESSION:
                self._metrics.revision_regression(key.aggregate_type)
            state.drop(work)  # the key moves on; its positions finish on the ack
            positions = list(work.positions)
            self._dead.send(positions, code, message, attempts=work.attempts, verdict=verdict)
        self._outcomes.failed(
            key.aggregate_type, key.aggregate_id, work.max_revision, code, message
        )

    def _finished(self, verdict: Verdict, tally: Tally) -> None:
        work, doc, state = verdict.work, verdict.document, self._state
        aggregate_type, events = work.key.aggregate_type, work.events
        result = verdict.kind.value.lower()  # applied, already_applied (the event's result)
        tally[(aggregate_type, result)] += 1
        if doc is None or len(events) > 1:
            tally[(aggregate_type, "superseded")] += len(events) - 1
        if doc is None:  # an event that only fans out: its job is recorded (`Processor`)
            state.finish(work)
            self._dead.succeeded()
            return
        if state.degraded is not None:
            was, state.degraded = state.degraded, None  # a write succeeded
            released = state.release_now(OUTAGE_CODES)
            log.info(
                "writes succeed again; resuming intake",
                extra={"was": was, "retries_released": released},
            )
        if self._debug:  # per-event success lines (docs/consumer.md "Logs")
            newest = work.newest
            for event, pos in events:
                said = result if event is newest else "superseded"
                log_outcome(log, event, pos, verdict, said, work.attempts)
        if doc.is_deleted and verdict.kind is OutcomeKind.APPLIED:
            self._metrics.tombstone()
        max_revision = work.max_revision
        # the gauge is "last observed": set once per batch from the batch's last work (_report)
        self._revision_lags[aggregate_type] = max(0, max_revision - doc.source_revision)
        now_ms, visible = self._now_ms, self._metrics.commit_to_searchable
        for stamp in state.finish(work):
            visible((now_ms - stamp) / 1000)
        self._dead.succeeded()
        self._outcomes.applied(
            aggregate_type,
            work.key.aggregate_id,
            max(max_revision, verdict.loaded_revision or 0),
            doc.source_revision,
            verdict.schema_version,
            doc.projection_hash,
        )

    def _report(self, tally: Tally) -> None:
        for (aggregate_type, result), n in tally.items():
            self._metrics.event_outcome(aggregate_type, result, n)
        for aggregate_type, lag in self._revision_lags.items():
            self._metrics.revision_lag(aggregate_type, lag)
        self._revision_lags.clear()


def _log_summary(works: list[Work], tally: Tally, seconds: float) -> None:
    """The one INFO line for a batch's successes."""
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
