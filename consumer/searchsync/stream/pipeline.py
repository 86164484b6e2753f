"""Wires the steps for an assignment: the only module that knows them all.

    intake ─ decode ─ coalesce ─ process (re-read, project, write) ─ settle
      │                                                               │
      └─ positions/ledger (commit = first unfinished offset) ◄── finished
                                 ▲
                   dead letters (finished only once the broker acknowledged the dead letter)

Each message carries its own position. A position is finished when its event was applied, found
already applied, superseded by a newer event of its key in the same work, or dead-lettered with an
acknowledged produce (docs/design.md, invariant 5). Nothing else finishes it, so nothing else
moves the commit.

The jobs live in their own modules: `admission` (decode and track what was consumed),
`settle` (a verdict's disposition: finish, retry, dead letter), `dead_letters` (budget and
acknowledged sends), `retries` (works waiting for their retry), `backpressure` (pause and
resume), `batches` (processing and settling batches) and `positions` (the ledger and the pending
messages).

The schema fence (`fence`, docs/design.md "Schema fence") is re-checked on its timer beside the
loop; the processor answers SCHEMA_FENCED for a fenced target, a SYSTEMIC code like any other.

Backpressure is explicit: when too many events wait, or a failure is SYSTEMIC, the assigned
partitions are paused (the consumer keeps polling, so it stays in the group) and resumed once the
pressure is gone. Nothing here sleeps: waits are on events with deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from searchsync.dlq.record import DlqBudget
from searchsync.errors import ErrorCode
from searchsync.kafka.intake import RawMessage
from searchsync.mysql.state import StateRecorder
from searchsync.observability.metrics import Metrics
from searchsync.stream.admission import Admission
from searchsync.stream.assignment import Assignment
from searchsync.stream.backpressure import Backpressure
from searchsync.stream.batches import Batches
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.fence import SchemaFence
from searchsync.stream.ledger import OffsetLedger
from searchsync.stream.options import PipelineOptions
from searchsync.stream.ports import DlqPort, IntakePort
from searchsync.stream.positions import Positions
from searchsync.stream.processor import Processor
from searchsync.stream.retries import RetryQueue
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.settle import Settler
from searchsync.stream.state_buffer import StateBuffer
from searchsync.stream.vitals import Vitals
from searchsync.types import TopicPartition

__all__ = ["DlqPort", "IntakePort", "Pipeline"]

log = logging.getLogger(__name__)


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
        fence: SchemaFence | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._intake_port = intake
        self._fence = fence
        self._fence_check: asyncio.Task[None] | None = None
        self._processor = processor
        self._metrics = metrics
        self._opt = options
        self._clock = clock
        self._coalescer = Coalescer(max_in_flight_keys, max_queued_events)
        self._positions = Positions(clock)
        self._retries = RetryQueue(self._coalescer, clock)
        self._backpressure = Backpressure(metrics)
        self._assignment = Assignment(
            positions=self._positions,
            coalescer=self._coalescer,
            retries=self._retries,
            backpressure=self._backpressure,
            metrics=metrics,
            clock=clock,
            drain_s=options.revoke_drain_s,
        )
        self._assigned = self._assignment.partitions
        self._dead = DeadLetters(
            dlq=dlq,
            budget=budget,
            positions=self._positions,
            metrics=metrics,
            retry=retry,
            group_id=options.group_id,
            wall_clock=wall_clock,
        )
        self._admission = Admission(
            assigned=self._assigned,
            positions=self._positions,
            coalescer=self._coalescer,
            dead_letters=self._dead,
            metrics=metrics,
            max_event_bytes=options.max_event_bytes,
            known_types=options.known_types,
            wall_clock=wall_clock,
        )
        self._settler = Settler(
            coalescer=self._coalescer,
            positions=self._positions,
            retries=self._retries,
            dead_letters=self._dead,
            budget=budget,
            metrics=metrics,
            retry=retry,
            is_assigned=self._assigned.__contains__,
        )
        self._vitals = Vitals(
            assigned=self._assigned,
            positions=self._positions,
            coalescer=self._coalescer,
            settler=self._settler,
            dead_letters=self._dead,
            fence=fence,
            metrics=metrics,
        )
        self._state_buffer = StateBuffer(
            state, interval_s=options.state_flush_interval_s, clock=clock
        )
        self._batches = Batches(
            processor=processor,
            settler=self._settler,
            state=self._state_buffer,
            coalescer=self._coalescer,
            max_batch_works=options.max_batch_works,
            max_concurrent=options.max_concurrent_batches,
            clock=clock,
        )

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
            while not stop.is_set() and self._dead.fatal is None:
                await self._adjust_pause()
                if consuming is None:
                    consuming = asyncio.ensure_future(
                        self._intake.consume(self._opt.consume_batch, self._opt.consume_timeout_s)
                    )
                self._batches.done.clear()
                woken = asyncio.ensure_future(self._batches.done.wait())
                waiters: set[asyncio.Future[Any]] = {consuming, woken}
                await asyncio.wait(
                    waiters,
                    timeout=self._opt.consume_timeout_s,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                woken.cancel()
                if consuming.done():
                    messages, consuming = consuming.result(), None
                    self._admission.take(messages)
                self._watch_fence()
                self._retries.release_due()
                self._batches.dispatch()
                now = self._clock()
                if now >= next_commit:
                    await self.commit()
                    next_commit = now + self._opt.commit_interval_s
                if now >= next_lag:
                    await self._vitals.report_lag(self._intake)
                    next_lag = now + self._opt.lag_interval_s
                self._state_buffer.flush_if_due()
                self._vitals.report_gauges()
        finally:
            if self._fence_check is not None:
                self._fence_check.cancel()
            self._dead.stop()
            if consuming is not None:  # let the thread's consume end; its messages stay unread
                with contextlib.suppress(Exception):
                    await consuming
            await self._drain(drain_deadline_s)
            await self.commit()
            await self._flush_state(min(drain_deadline_s, 5.0))
        if self._dead.fatal is not None:
            raise self._dead.fatal

    async def _drain(self, deadline_s: float) -> None:
        """Finish what is in flight within the deadline; what is not finished stays uncommitted."""
        deadline = self._clock() + deadline_s

        def busy() -> set[asyncio.Task[None]]:
            return self._batches.tasks() | self._dead.tasks

        while busy() and self._clock() < deadline:
            await asyncio.wait(busy(), timeout=max(0.0, deadline - self._clock()))
        for task in busy():
            task.cancel()

    # -- rebalance (RebalanceListener) ------------------------------------------------------

    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._assignment.assigned(partitions)

    async def revoking(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Stop taking work for `partitions`, let their in-flight work finish, return offsets.

        Runs on the loop while the consumer thread waits: it must not call the intake.
        """
        offsets = await self._assignment.revoking(partitions, self._batches)
        await self._flush_state(self._opt.revoke_drain_s)
        return offsets

    async def _flush_state(self, deadline_s: float) -> None:
        """Write the buffered projection state now, within `deadline_s` (docs/consumer.md)."""
        try:
            await asyncio.wait_for(self._state_buffer.flush(), max(0.1, deadline_s))
        except TimeoutError:
            log.warning("projection state not written within %.1fs", deadline_s)

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None:
        self._assignment.revoked(partitions, lost=lost)

    # -- schema fence ----------------------------------------------------------------------

    def _watch_fence(self) -> None:
        """Re-check the schema fence on its timer, beside the loop; once no target is fenced,
        the works it held are retried at once (docs/design.md, "Schema fence")."""
        fence = self._fence
        if fence is None:
            return
        if (self._fence_check is None or self._fence_check.done()) and fence.due():
            self._fence_check = asyncio.create_task(fence.refresh_if_due())
        if self._retries.waiting(ErrorCode.SCHEMA_FENCED) and not fence.holding():
            self._retries.release_now(ErrorCode.SCHEMA_FENCED)

    # -- commits, pause/resume, health -----------------------------------------------------

    async def commit(self) -> None:
        offsets = self.ledger.to_commit()
        if not offsets:
            return
        results = await self._intake.commit(offsets)
        for tp, ok in results.items():
            self._metrics.commit(ok)
            if ok:
                self.ledger.mark_committed(tp, offsets[tp])

    async def _adjust_pause(self) -> None:
        self._settler.clear_stale_degraded(
            work_waiting=bool(self._retries) or self._coalescer.in_flight() > 0
        )
        reason: str | None = self._settler.degraded
        if reason is None and self._coalescer.is_full():
            reason = "too many events waiting"
        await self._backpressure.adjust(self._intake, self._assigned, reason)

    def health(self) -> tuple[bool, list[str]]:
        """Ready: partitions assigned, not stalled, no fatal error (`Vitals.health`)."""
        return self._vitals.health()

    # -- introspection for tests and the CLI ------------------------------------------------

    @property
    def ledger(self) -> OffsetLedger:
        return self._positions.ledger

    @property
    def fatal(self) -> BaseException | None:
        return self._dead.fatal
