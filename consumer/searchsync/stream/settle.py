"""Acting on verdicts: the one place a work's outcome becomes finish, retry or dead letter.

What a failed work becomes is its error code's disposition (`searchsync.errors`): POISON is
dead-lettered at once, TRANSIENT is retried with backoff up to the attempt limit and then
dead-lettered, SYSTEMIC (a shared dependency is down, or the schema fence is up) is retried
without spending the work's attempts and sets `degraded`, which pauses intake until a write
succeeds again (docs/design.md, "Retry").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from searchsync.dlq.record import DlqBudget
from searchsync.errors import Disposition, ErrorCode
from searchsync.mysql.state import StateUpdate
from searchsync.observability.metrics import Metrics
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.outcomes import log_outcome
from searchsync.stream.positions import Positions
from searchsync.stream.retries import RetryQueue
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.verdict import Result, Verdict
from searchsync.types import TopicPartition

__all__ = ["OUTAGE_CODES", "OUTAGE_RETRY_CAP_S", "SYSTEMIC_RETRY_CAP_S", "Settler", "Tally"]

Tally = dict[tuple[str, str], int]
"""Finished events of one batch: (aggregate type, result) -> count."""

log = logging.getLogger(__name__)

SYSTEMIC_RETRY_CAP_S = 30.0  # a systemic failure is retried at least this often, forever
# A dependency that could not be reached (down, restarting) rather than one shedding load: its
# works are retried at least every OUTAGE_RETRY_CAP_S, so the consumer notices the dependency is
# back within that, and the first write that succeeds releases every other work waiting on one of
# these codes at once (it proves the write path answers again), so none waits out its own backoff.
OUTAGE_CODES = frozenset({ErrorCode.ES_UNAVAILABLE, ErrorCode.ES_5XX, ErrorCode.MYSQL_UNAVAILABLE})
OUTAGE_RETRY_CAP_S = 10.0


class Settler:
    """Turns each verdict into its effect and the projection-state update to record."""

    def __init__(
        self,
        *,
        coalescer: Coalescer,
        positions: Positions,
        retries: RetryQueue,
        dead_letters: DeadLetters,
        budget: DlqBudget,
        metrics: Metrics,
        retry: RetryPolicy,
        is_assigned: Callable[[TopicPartition], bool],
    ) -> None:
        self._coalescer = coalescer
        self._positions = positions
        self._retries = retries
        self._dead = dead_letters
        self._budget = budget
        self._metrics = metrics
        self._retry = retry
        self._is_assigned = is_assigned
        self._systemic_attempts: dict[tuple[str, str], int] = {}
        self._revision_lags: dict[str, int] = {}  # aggregate type -> lag, until `report`
        self.degraded: ErrorCode | None = None  # the last SYSTEMIC code, until a write succeeds

    def clear_stale_degraded(self, *, work_waiting: bool) -> None:
        """What failed systemically is gone (revoked, or dead-lettered on a later attempt)
        without a success to clear the flag: clear it, or intake would never resume."""
        if self.degraded is not None and not work_waiting:
            self.degraded = None

    def settle(self, verdict: Verdict, tally: Tally) -> StateUpdate | None:
        """Act on one verdict: finish, schedule a retry, or dead-letter the work's events.

        Finished events are counted in `tally` ((aggregate type, result) -> events); the caller
        reports the tally once per batch (`report`)."""
        work = verdict.work
        key = (work.key.aggregate_type, work.key.aggregate_id)
        if not any(self._is_assigned((p.topic, p.partition)) for p in work.positions):
            # Every partition of the work was revoked while it ran: its offsets belong to the new
            # owner, who re-reads them. No retry, no dead letter, no budget spent here.
            self._coalescer.complete(work)
            self._systemic_attempts.pop(key, None)
            return None
        if verdict.finished:
            return self._finished(verdict, tally)
        code = verdict.code
        assert code is not None  # a verdict that did not finish failed, with a code
        message = verdict.message or code.value
        disposition = verdict.disposition
        if disposition is not Disposition.POISON:
            self._metrics.retry(work.key.aggregate_type, code)
            for event, pos in work.events:
                log_outcome(log, event, pos, verdict, "retry", work.attempts, code, message)
            if disposition is Disposition.SYSTEMIC:
                n = self._systemic_attempts.get(key, 0) + 1
                self._systemic_attempts[key] = n
                self.degraded = code
                cap = OUTAGE_RETRY_CAP_S if code in OUTAGE_CODES else SYSTEMIC_RETRY_CAP_S
                self._retries.schedule(work, min(self._retry.delay(n), cap), code)
                return None
            own = work.attempts - self._systemic_attempts.get(key, 0)
            if not self._retry.exhausted(own):
                self._retries.schedule(work, self._retry.delay(own), code)
                return StateUpdate(*key, work.max_revision, error_code=code, error_message=message)
            message = f"retries exhausted after {own} attempts: {message}"
        # POISON, or TRANSIENT with its attempts spent
        if code is ErrorCode.REVISION_REGRESSION:
            self._metrics.revision_regression(work.key.aggregate_type)
        positions = list(work.positions)
        self._systemic_attempts.pop(key, None)
        self._coalescer.complete(work)  # the key may move on; its positions finish on DLQ ack
        self._dead.send(positions, code, message, attempts=work.attempts, verdict=verdict)
        return StateUpdate(*key, work.max_revision, error_code=code, error_message=message)

    def report(self, tally: Tally) -> None:
        """Count a batch's finished events in the metrics, once per (type, result)."""
        for (aggregate_type, result), n in tally.items():
            self._metrics.event_outcome(aggregate_type, result, n)
        for aggregate_type, lag in self._revision_lags.items():
            self._metrics.revision_lag(aggregate_type, lag)
        self._revision_lags.clear()

    def _finished(self, verdict: Verdict, tally: Tally) -> StateUpdate:
        work = verdict.work
        doc = verdict.document
        assert doc is not None
        aggregate_type = work.key.aggregate_type
        if self._systemic_attempts:
            self._systemic_attempts.pop((aggregate_type, work.key.aggregate_id), None)
        if self.degraded is not None:
            released = sum(self._retries.release_now(c) for c in OUTAGE_CODES)
            log.info(
                "writes succeed again; resuming intake",
                extra={"was": self.degraded, "retries_released": released},
            )
            self.degraded = None
        positions = self._coalescer.complete(work)
        now_ms = time.time() * 1000
        events = work.events
        result = verdict.result.value
        key = (aggregate_type, result)
        tally[key] = tally.get(key, 0) + 1
        if len(events) > 1:
            superseded = (aggregate_type, "superseded")
            tally[superseded] = tally.get(superseded, 0) + len(events) - 1
        if log.isEnabledFor(logging.DEBUG):  # per-event success lines (docs/consumer.md "Logs")
            newest = work.newest
            for event, pos in events:
                said = result if event is newest else "superseded"
                log_outcome(log, event, pos, verdict, said, work.attempts)
        get = self._positions.get
        for _, pos in events:
            pending = get(pos)
            if pending is not None and pending.raw.timestamp_ms is not None:
                self._metrics.commit_to_searchable(
                    max(0.0, now_ms - pending.raw.timestamp_ms) / 1000
                )
        if doc.is_deleted and verdict.result is Result.APPLIED:
            self._metrics.tombstone()
        max_revision = work.max_revision
        # the gauge is "last observed": set once per batch from the batch's last work (report)
        self._revision_lags[aggregate_type] = max(0, max_revision - doc.source_revision)
        self._positions.finish(positions)
        self._budget.record_success()
        return StateUpdate(
            aggregate_type,
            work.key.aggregate_id,
            max(max_revision, verdict.loaded_revision or 0),
            indexed_revision=doc.source_revision,
            schema_version=verdict.schema_version,
            projection_hash=doc.projection_hash,
        )
