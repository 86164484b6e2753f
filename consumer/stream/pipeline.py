"""Wires the steps for an assignment: the only module that knows them all.

    intake ─ decode ─ coalesce ─ process (re-read, project, write) ─ verdict
      │                                                              │
      └─ ledger (commit = first unfinished offset) ◄── finished ─────┘
                                 ▲
                   DLQ (finished only once the broker acknowledged the dead letter)

Each message carries its own position. A position is finished when its event was applied, found
already applied, superseded by a newer event of its key in the same work, or dead-lettered with an
acknowledged produce (docs/design.md, invariant 5). Nothing else finishes it, so nothing else
moves the commit.

What a failed work becomes is its error code's disposition (`consumer.errors`): POISON is
dead-lettered at once, TRANSIENT is retried with backoff up to the attempt limit and then
dead-lettered, SYSTEMIC (a shared dependency is down) is retried without spending the work's
attempts and pauses intake. `_settle` is the one place that acts on it.

Backpressure is explicit: when too many events wait, or a failure is SYSTEMIC, the assigned
partitions are paused (the consumer keeps polling, so it stays in the
group) and resumed once the pressure is gone. Nothing here sleeps: waits are on events with
deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from consumer.errors import (
    Disposition,
    DlqBudgetExceeded,
    ErrorCode,
    PoisonMessage,
    TransientError,
)
from consumer.events import decode
from consumer.kafka.intake import RawMessage
from consumer.mysql.state import StateRecorder, StateUpdate
from consumer.observability.logs import log_event_outcome
from consumer.observability.metrics import Metrics
from consumer.stream.coalesce import Coalescer, Work
from consumer.stream.dlq import DlqBudget, DlqRecord
from consumer.stream.ledger import OffsetLedger
from consumer.stream.processor import Processor
from consumer.stream.retry import RetryPolicy
from consumer.stream.verdict import Result, Verdict
from consumer.types import Position, ThinEvent, TopicPartition

log = logging.getLogger(__name__)

SYSTEMIC_RETRY_CAP_S = 30.0  # a systemic failure is retried at least this often, forever
STALL_AFTER_S = 120.0  # pending work and no progress for this long: /healthz says not ready
MAX_STATE_WRITES = 2  # state writes running beside the batches


class IntakePort(Protocol):
    """The part of `consumer.kafka.intake.KafkaIntake` the pipeline uses (a fake in unit tests)."""

    async def consume(self, max_messages: int, timeout_s: float) -> list[RawMessage]: ...

    async def commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, bool]: ...

    async def pause(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def resume(self, partitions: Sequence[TopicPartition]) -> None: ...

    async def high_watermarks(
        self, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]: ...


class DlqPort(Protocol):
    async def send(self, record: DlqRecord, key: bytes | None) -> None: ...


@dataclass(frozen=True, slots=True)
class PipelineOptions:
    group_id: str
    known_types: Collection[str]
    max_event_bytes: int
    consume_batch: int = 500
    consume_timeout_s: float = 0.1
    max_batch_works: int = 500
    max_concurrent_batches: int = 2
    commit_interval_s: float = 1.0
    lag_interval_s: float = 15.0
    revoke_drain_s: float = 10.0


@dataclass(slots=True)
class _Pending:
    """What the pipeline keeps for an unfinished message, to dead-letter it faithfully."""

    raw: RawMessage
    event: ThinEvent | None
    first_failed_at: datetime | None = None


@dataclass(order=True, slots=True)
class _Due:
    at: float
    seq: int
    work: Work = field(compare=False)


class Pipeline:
    """Consumes, coalesces, processes, dead-letters and commits, for as long as it runs."""

    def __init__(
        self,
        *,
        intake: IntakePort | None,
        processor: Processor,
        dlq: DlqPort,
        budget: DlqBudget,
        state: StateRecorder,
        metrics: Metrics,
        retry: RetryPolicy,
        options: PipelineOptions,
        max_in_flight_keys: int,
        max_queued_events: int,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._intake_port = intake
        self._processor = processor
        self._dlq = dlq
        self._budget = budget
        self._state = state
        self._metrics = metrics
        self._retry = retry
        self._opt = options
        self._clock = clock
        self._wall = wall_clock
        self._ledger = OffsetLedger()
        self._coalescer = Coalescer(max_in_flight_keys, max_queued_events)
        self._pending: dict[Position, _Pending] = {}
        self._assigned: set[TopicPartition] = set()
        self._paused: set[TopicPartition] = set()
        self._retries: list[_Due] = []
        self._seq = itertools.count()
        self._systemic_attempts: dict[tuple[str, str], int] = {}
        self._batches: set[asyncio.Task[None]] = set()
        self._state_writes: set[asyncio.Task[None]] = set()
        self._dead_letters: set[asyncio.Task[None]] = set()
        self._works_by_tp: dict[TopicPartition, int] = {}
        self._degraded: str | None = None
        self._fatal: BaseException | None = None
        self._last_progress = clock()
        self._wake = asyncio.Event()
        self._batch_done = asyncio.Event()
        self._stopping = False

    # -- lifecycle -------------------------------------------------------------------------

    def attach_intake(self, intake: IntakePort) -> None:
        """Set the intake later: the real one needs this pipeline as its rebalance listener."""
        self._intake_port = intake

    @property
    def _intake(self) -> IntakePort:
        if self._intake_port is None:
            raise RuntimeError("the pipeline has no intake: call attach_intake() first")
        return self._intake_port

    async def run(self, stop: asyncio.Event, *, drain_deadline_s: float) -> None:
        """Run until `stop` is set (or a fatal error), then drain and commit the prefix.

        A consume is always in flight on the intake's thread while the loop waits for either it
        or a finished batch, so a free batch slot is filled at once instead of after the next
        consume returns.
        """
        next_commit = self._clock() + self._opt.commit_interval_s
        next_lag = self._clock()
        consuming: asyncio.Future[list[RawMessage]] | None = None
        try:
            while not stop.is_set() and self._fatal is None:
                await self._adjust_pause()
                if consuming is None:
                    consuming = asyncio.ensure_future(
                        self._intake.consume(self._opt.consume_batch, self._opt.consume_timeout_s)
                    )
                self._batch_done.clear()
                woken = asyncio.ensure_future(self._batch_done.wait())
                waiters: set[asyncio.Future[Any]] = {consuming, woken}
                await asyncio.wait(
                    waiters,
                    timeout=self._opt.consume_timeout_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                woken.cancel()
                if consuming.done():
                    messages, consuming = consuming.result(), None
                    for raw in messages:
                        self._intake_one(raw)
                self._release_due()
                self._dispatch()
                now = self._clock()
                if now >= next_commit:
                    await self.commit()
                    next_commit = now + self._opt.commit_interval_s
                if now >= next_lag:
                    await self._report_lag()
                    next_lag = now + self._opt.lag_interval_s
                self._report_gauges()
        finally:
            self._stopping = True
            if consuming is not None:  # let the thread's consume end; its messages stay unread
                with contextlib.suppress(Exception):
                    await consuming
            await self._drain(drain_deadline_s)
            await self.commit()
        if self._fatal is not None:
            raise self._fatal

    async def _drain(self, deadline_s: float) -> None:
        """Finish what is in flight within the deadline; what is not finished stays uncommitted."""
        deadline = self._clock() + deadline_s

        def busy() -> set[asyncio.Task[None]]:
            return self._batches | self._dead_letters | self._state_writes

        while busy() and self._clock() < deadline:
            await asyncio.wait(busy(), timeout=max(0.0, deadline - self._clock()))
        for task in busy():
            task.cancel()

    # -- rebalance (RebalanceListener) ------------------------------------------------------

    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._assigned.update(partitions)
        self._metrics.set_assigned(len(self._assigned))
        self._last_progress = self._clock()

    async def revoking(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Stop taking work for `partitions`, let their in-flight work finish, return offsets.

        Runs on the loop while the consumer thread waits: it must not call the intake.
        """
        revoked = set(partitions)
        self._drop_waiting(revoked)
        deadline = self._clock() + self._opt.revoke_drain_s
        while any(self._works_by_tp.get(tp, 0) for tp in revoked) and self._clock() < deadline:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), max(0.0, deadline - self._clock()))
            except TimeoutError:
                break
        self._drop_waiting(revoked)  # retries the drained works scheduled meanwhile
        offsets = self._ledger.to_commit()
        return {tp: o for tp, o in offsets.items() if tp in revoked}

    def _drop_waiting(self, revoked: set[TopicPartition]) -> None:
        """Forget the scheduled retries and queued events of `revoked` partitions."""
        for due in list(self._retries):
            if any((p.topic, p.partition) in revoked for p in due.work.positions):
                self._retries.remove(due)
                self._coalescer.release(due.work)
        heapq.heapify(self._retries)
        for topic, partition in revoked:
            self._coalescer.drop_partition(topic, partition)

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None:
        for tp in partitions:
            if lost:
                self._drop_waiting({tp})
            self._ledger.forget(tp)
            self._assigned.discard(tp)
            self._paused.discard(tp)
            self._metrics.forget_partition(*tp)
            for pos in [p for p in self._pending if (p.topic, p.partition) == tp]:
                del self._pending[pos]
        self._metrics.set_assigned(len(self._assigned))

    # -- intake ----------------------------------------------------------------------------

    def _intake_one(self, raw: RawMessage) -> None:
        tp = (raw.topic, raw.partition)
        if tp not in self._assigned:  # fetched before a revoke: the new owner will read it
            return
        pos = Position(raw.topic, raw.partition, raw.offset)
        self._ledger.track(pos)
        self._metrics.consumed(raw.topic)
        try:
            event = decode(
                raw.value, max_bytes=self._opt.max_event_bytes, known_types=self._opt.known_types
            )
        except PoisonMessage as exc:
            self._pending[pos] = _Pending(raw, None, self._wall())
            self._metrics.poison(exc.code)
            self._dead_letter([pos], exc.code, exc.message, attempts=1)
            return
        self._pending[pos] = _Pending(raw, event)
        self._coalescer.add(event, pos)

    # -- processing ------------------------------------------------------------------------

    def _dispatch(self) -> None:
        while len(self._batches) < self._opt.max_concurrent_batches and not self._stopping:
            works = self._coalescer.take_ready(self._opt.max_batch_works)
            if not works:
                return
            for work in works:
                for tp in {(p.topic, p.partition) for p in work.positions}:
                    self._works_by_tp[tp] = self._works_by_tp.get(tp, 0) + 1
            task = asyncio.create_task(self._run_batch(works))
            self._batches.add(task)
            task.add_done_callback(self._batches.discard)

    async def _run_batch(self, works: list[Work]) -> None:
        try:
            verdicts = await self._processor.process(works)
        except Exception as exc:  # a bug in a step: each work failed on its own (INTERNAL)
            log.exception("batch failed unexpectedly; its works will be retried")
            message = f"{type(exc).__name__}: {exc}"
            verdicts = [Verdict(w, Result.FAILED, ErrorCode.INTERNAL, message) for w in works]
        updates: list[StateUpdate] = []
        for verdict in verdicts:
            update = self._settle(verdict)
            if update is not None:
                updates.append(update)
        for work in works:
            for tp in {(p.topic, p.partition) for p in work.positions}:
                left = self._works_by_tp.get(tp, 0) - 1
                if left > 0:
                    self._works_by_tp[tp] = left
                else:
                    self._works_by_tp.pop(tp, None)
        self._wake.set()
        self._batch_done.set()
        if updates:
            # The batch slot is free once its verdicts are settled: the state write (bookkeeping,
            # idempotent and order-free) runs beside the next batch, at most a few at a time.
            current = asyncio.current_task()
            if current is not None and len(self._state_writes) < MAX_STATE_WRITES:
                self._batches.discard(current)
                self._state_writes.add(current)
            try:
                await self._state.record(updates)
            except Exception:  # state is bookkeeping: never block the index on it
                log.warning("recording projection state failed", exc_info=True)
            finally:
                self._state_writes.discard(current)

    def _settle(self, verdict: Verdict) -> StateUpdate | None:
        """Act on one verdict: finish, schedule a retry, or dead-letter the work's events."""
        work = verdict.work
        key = (work.key.aggregate_type, work.key.aggregate_id)
        if not any((p.topic, p.partition) in self._assigned for p in work.positions):
            # Every partition of the work was revoked while it ran: its offsets belong to the new
            # owner, who re-reads them. No retry, no dead letter, no budget spent here.
            self._coalescer.complete(work)
            self._systemic_attempts.pop(key, None)
            return None
        newest = work.newest
        if verdict.finished:
            doc = verdict.document
            assert doc is not None
            self._systemic_attempts.pop(key, None)
            if self._degraded is not None:
                log.info("writes succeed again; resuming intake", extra={"was": self._degraded})
                self._degraded = None
            positions = self._coalescer.complete(work)
            now_ms = time.time() * 1000
            for event, pos in work.events:
                result = verdict.result.value if event is newest else "superseded"
                self._log_outcome(event, pos, verdict, result, work.attempts)
                self._metrics.event_outcome(event.aggregate_type, result)
                pending = self._pending.get(pos)
                if pending is not None and pending.raw.timestamp_ms is not None:
                    self._metrics.commit_to_searchable(
                        max(0.0, now_ms - pending.raw.timestamp_ms) / 1000
                    )
            if doc.is_deleted and verdict.result is Result.APPLIED:
                self._metrics.tombstone()
            self._metrics.revision_lag(
                work.key.aggregate_type, max(0, work.max_revision - doc.source_revision)
            )
            self._finish(positions)
            self._budget.record_success()
            self._last_progress = self._clock()
            return StateUpdate(
                work.key.aggregate_type,
                work.key.aggregate_id,
                max(work.max_revision, verdict.loaded_revision or 0),
                indexed_revision=doc.source_revision,
                schema_version=verdict.schema_version,
                projection_hash=doc.projection_hash,
            )
        code = verdict.code
        assert code is not None  # a verdict that did not finish failed, with a code
        message = verdict.message or code.value
        disposition = verdict.disposition
        if disposition is not Disposition.POISON:
            self._metrics.retry(work.key.aggregate_type, code)
            for event, pos in work.events:
                self._log_outcome(event, pos, verdict, "retry", work.attempts, code, message)
            if disposition is Disposition.SYSTEMIC:
                n = self._systemic_attempts.get(key, 0) + 1
                self._systemic_attempts[key] = n
                self._degraded = code
                delay = min(self._retry.delay(n), SYSTEMIC_RETRY_CAP_S)
                self._schedule(work, delay)
                return None
            own = work.attempts - self._systemic_attempts.get(key, 0)
            if not self._retry.exhausted(own):
                self._schedule(work, self._retry.delay(own))
                return StateUpdate(*key, work.max_revision, error_code=code, error_message=message)
            message = f"retries exhausted after {own} attempts: {message}"
        # POISON, or TRANSIENT with its attempts spent
        if code is ErrorCode.REVISION_REGRESSION:
            self._metrics.revision_regression(work.key.aggregate_type)
        positions = list(work.positions)
        self._systemic_attempts.pop(key, None)
        self._coalescer.complete(work)  # the key may move on; its positions finish on DLQ ack
        self._dead_letter(positions, code, message, attempts=work.attempts, verdict=verdict)
        return StateUpdate(*key, work.max_revision, error_code=code, error_message=message)

    def _schedule(self, work: Work, delay: float) -> None:
        heapq.heappush(self._retries, _Due(self._clock() + delay, next(self._seq), work))

    def _release_due(self) -> None:
        now = self._clock()
        while self._retries and self._retries[0].at <= now:
            self._coalescer.release(heapq.heappop(self._retries).work)

    def _finish(self, positions: Sequence[Position]) -> None:
        for pos in positions:
            self._ledger.finish(pos)
            self._pending.pop(pos, None)

    # -- dead letters ----------------------------------------------------------------------

    def _dead_letter(
        self,
        positions: list[Position],
        code: ErrorCode,
        message: str,
        *,
        attempts: int,
        verdict: Verdict | None = None,
    ) -> None:
        """Send each message to the DLQ; its position finishes only when the send is acked."""
        try:
            for _ in positions:
                self._budget.record_dead()
        except DlqBudgetExceeded as exc:
            log.error(
                "DLQ error budget exceeded: stopping the consumer", extra={"reason": str(exc)}
            )
            self._fatal = exc
            return
        task = asyncio.create_task(self._send_dead(positions, code, message, attempts, verdict))
        self._dead_letters.add(task)
        task.add_done_callback(self._dead_letters.discard)

    async def _send_dead(
        self,
        positions: list[Position],
        code: ErrorCode,
        message: str,
        attempts: int,
        verdict: Verdict | None,
    ) -> None:
        now = self._wall()
        for pos in positions:
            pending = self._pending.get(pos)
            if pending is None:  # the partition was revoked meanwhile
                continue
            raw = pending.raw
            record = DlqRecord.for_message(
                topic=raw.topic,
                partition=raw.partition,
                offset=raw.offset,
                key=raw.key,
                value=raw.value,
                consumer_group=self._opt.group_id,
                error_code=code.value,
                error_message=message,
                attempts=attempts,
                first_failed_at=pending.first_failed_at or now,
                last_failed_at=now,
                event=pending.event,
                projection_schema_version=verdict.schema_version if verdict else None,
            )
            send_attempt = 0
            while True:
                try:
                    await self._dlq.send(record, raw.key)
                    break
                except TransientError as exc:
                    send_attempt += 1
                    if self._stopping:
                        log.warning("DLQ send failed during shutdown; offset stays uncommitted")
                        return
                    log.warning("DLQ send failed; retrying", extra={"error": exc.message})
                    await self._wait_for(min(self._retry.delay(send_attempt), SYSTEMIC_RETRY_CAP_S))
            self._metrics.dead(pending.event.aggregate_type if pending.event else "unknown", code)
            if pending.event is not None:
                self._metrics.event_outcome(pending.event.aggregate_type, "dead_lettered")
                self._log_outcome(
                    pending.event, pos, verdict, "dead_lettered", attempts, code, message
                )
            else:
                log.warning(
                    "poison message dead-lettered",
                    extra={
                        "topic": pos.topic,
                        "partition": pos.partition,
                        "offset": pos.offset,
                        "error_code": code,
                        "error_message": message,
                    },
                )
            self._finish([pos])
            self._last_progress = self._clock()

    async def _wait_for(self, seconds: float) -> None:
        """Wait up to `seconds` for a wake-up (no sleeping in a loop that could be told to stop)."""
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    # -- commits, pause/resume, gauges -----------------------------------------------------

    async def commit(self) -> None:
        offsets = self._ledger.to_commit()
        if not offsets:
            return
        results = await self._intake.commit(offsets)
        for tp, ok in results.items():
            self._metrics.commit(ok)
            if ok:
                self._ledger.mark_committed(tp, offsets[tp])

    async def _adjust_pause(self) -> None:
        if self._degraded is not None and not self._retries and not self._coalescer.in_flight():
            # What failed systemically is gone (revoked, or dead-lettered on a later attempt)
            # without a success to clear the flag: stay paused and nothing would ever resume.
            self._degraded = None
        pressure = self._coalescer.is_full() or self._degraded is not None
        if pressure:
            to_pause = sorted(self._assigned - self._paused)
            if to_pause:
                log.warning(
                    "pausing intake",
                    extra={
                        "reason": self._degraded or "too many events waiting",
                        "partitions": len(to_pause),
                    },
                )
                await self._intake.pause(to_pause)
                self._paused.update(to_pause)
        elif self._paused:
            to_resume = sorted(self._paused & self._assigned)
            await self._intake.resume(to_resume)
            self._paused.clear()
            log.info("resuming intake", extra={"partitions": len(to_resume)})
        self._metrics.set_paused(len(self._paused))

    async def _report_lag(self) -> None:
        if not self._assigned:
            return
        highs = await self._intake.high_watermarks(sorted(self._assigned))
        for tp, high in highs.items():
            position = self._ledger.committable(tp)
            if position is not None:
                self._metrics.set_lag(tp[0], tp[1], max(0, high - position))

    def _report_gauges(self) -> None:
        self._metrics.set_pending(self._ledger.total_pending())
        self._metrics.set_processing(self._coalescer.in_flight())
        oldest = min(
            (p.raw.timestamp_ms for p in self._pending.values() if p.raw.timestamp_ms),
            default=None,
        )
        age = 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)
        self._metrics.set_oldest_pending_age(age)

    def health(self) -> tuple[bool, list[str]]:
        """Ready: partitions assigned, not stalled, no fatal error."""
        reasons: list[str] = []
        if self._fatal is not None:
            reasons.append(f"fatal: {self._fatal}")
        if not self._assigned:
            reasons.append("no partitions assigned")
        if self._degraded is not None:
            reasons.append(f"writes failing systemically ({self._degraded}); intake paused")
        if self._ledger.total_pending() > 0 and self._clock() - self._last_progress > STALL_AFTER_S:
            reasons.append(f"no progress for more than {STALL_AFTER_S:.0f}s with work pending")
        return (not reasons, reasons)

    def _log_outcome(
        self,
        event: ThinEvent,
        pos: Position,
        verdict: Verdict | None,
        result: str,
        attempt: int,
        error_code: ErrorCode | None = None,
        error_message: str | None = None,
    ) -> None:
        log_event_outcome(
            log,
            event_id=event.event_id,
            aggregate_type=event.aggregate_type,
            aggregate_id=event.aggregate_id,
            event_revision=event.source_revision,
            loaded_revision=verdict.loaded_revision if verdict else None,
            projection_schema_version=verdict.schema_version if verdict else None,
            target_alias=verdict.alias if verdict else None,
            operation=event.operation.value,
            attempt=attempt,
            result=result,
            error_code=error_code,
            error_message=error_message,
            topic=pos.topic,
            partition=pos.partition,
            offset=pos.offset,
        )

    # -- introspection for tests and the CLI ------------------------------------------------

    @property
    def ledger(self) -> OffsetLedger:
        return self._ledger

    @property
    def fatal(self) -> BaseException | None:
        return self._fatal
