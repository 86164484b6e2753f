"""The live path: intake, admit (decode), `WorkState`, batches (re-read, project, write, settle),
commit of the first unfinished offset. A position finishes only when applied, superseded or
dead-lettered with an ack (docs/design.md, invariant 5). While `WorkState.pressure` names a reason
the assigned partitions are paused (still polled); nothing sleeps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from searchsync.config import Settings
from searchsync.dlq.record import DlqBudget, DlqProducer
from searchsync.errors import ErrorCode, PoisonMessage
from searchsync.events import decode
from searchsync.kafka.intake import KafkaIntake
from searchsync.mysql.projection_state import StateRecorder
from searchsync.mysql.state_buffer import StateBuffer
from searchsync.observability.metrics import Metrics
from searchsync.stream.batches import Batches
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.fence import SchemaFence
from searchsync.stream.ledger import OffsetLedger
from searchsync.stream.processor import Processor
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work_state import WorkState
from searchsync.types import RawMessage, ThinEvent, TopicPartition

log = logging.getLogger(__name__)

STATE_FLUSH_INTERVAL_S = 1.0  # projection-state outcomes are written at least this often
STALL_AFTER_S = 120.0  # pending work and no progress for this long: /healthz says not ready


class Pipeline:
    """Consumes, coalesces, processes, dead-letters and commits."""

    def __init__(
        self,
        *,
        processor: Processor,
        dlq: DlqProducer,
        budget: DlqBudget,
        state: StateRecorder,
        metrics: Metrics,
        retry: RetryPolicy,
        settings: Settings,
        known_types: Collection[str],
        fence: SchemaFence,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings.pipeline
        self._kafka = settings.kafka
        self._known_types = known_types
        self._processor = processor
        self._fence = fence
        self._fence_check: asyncio.Task[None] | None = None
        self._metrics = metrics
        self._clock = clock
        # a revoke gives in-flight work up to 10 s (docs/consumer.md, "Rebalance and shutdown")
        self._drain_s = min(10.0, self._settings.shutdown_deadline_s)
        self._work = WorkState(
            max_in_flight=self._settings.max_in_flight_keys,
            max_queued=self._settings.max_queued_events,
            retry=retry,
            clock=clock,
        )
        self._dead = DeadLetters(
            dlq=dlq,
            budget=budget,
            state=self._work,
            metrics=metrics,
            retry=retry,
            group_id=settings.kafka.group_id,
        )
        self._paused: set[TopicPartition] = set()
        self._outcomes = StateBuffer(state, interval_s=STATE_FLUSH_INTERVAL_S, clock=clock)
        self._batches = Batches(
            state=self._work,
            processor=processor,
            dead_letters=self._dead,
            budget=budget,
            outcomes=self._outcomes,
            metrics=metrics,
            max_batch_works=settings.elasticsearch.bulk_max_actions,
            clock=clock,
        )

    async def run(
        self, intake: KafkaIntake, stop: asyncio.Event, *, drain_deadline_s: float
    ) -> None:
        """Run until `stop` is set (or a fatal error), then drain and commit the prefix. A consume
        is always in flight while the loop waits for it or a finished batch."""
        batch, timeout_s = self._kafka.poll_batch_size, self._kafka.poll_timeout_s
        next_commit = self._clock() + self._settings.commit_interval_s
        next_lag = self._clock()
        consuming: asyncio.Future[list[RawMessage]] | None = None
        try:
            while not stop.is_set() and self._dead.fatal is None:
                await self._adjust_pause(intake)
                if consuming is None:
                    consuming = asyncio.ensure_future(intake.consume(batch, timeout_s))
                self._batches.done.clear()
                woken = asyncio.ensure_future(self._batches.done.wait())
                waiters: set[asyncio.Future[Any]] = {consuming, woken}
                await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
                if consuming.done():
                    messages, consuming = consuming.result(), None
                    self._admit(messages)
                self._watch_fence()
                self._work.release_due()
                self._batches.dispatch()
                now = self._clock()
                if now >= next_commit:
                    await self.commit(intake)
                    next_commit = now + self._settings.commit_interval_s
                if now >= next_lag:
                    await self._report_lag(intake)
                    next_lag = now + self._settings.lag_poll_interval_s
                self._outcomes.flush_if_due()
                self._report_gauges()
        finally:
            if self._fence_check is not None:
                self._fence_check.cancel()
            self._dead.stop()
            if consuming is not None:  # let the thread's consume end; its messages stay unread
                with contextlib.suppress(Exception):
                    await consuming
            await self._drain(drain_deadline_s)
            await self.commit(intake)
            await self._flush_state(min(drain_deadline_s, 5.0))
        if self._dead.fatal is not None:
            raise self._dead.fatal

    def _admit(self, messages: Sequence[RawMessage]) -> None:
        """Decode and admit each message; an undecodable one is dead-lettered. Messages of
        partitions no longer assigned are skipped, uncounted."""
        counts: dict[str, int] = {}
        max_bytes, known = self._settings.max_event_bytes, self._known_types
        assigned = self._work.assigned
        admitted: list[tuple[RawMessage, ThinEvent | None]] = []
        poison: list[tuple[RawMessage, PoisonMessage]] = []
        for raw in messages:
            if (raw.topic, raw.partition) not in assigned:
                continue
            counts[raw.topic] = counts.get(raw.topic, 0) + 1
            try:
                event: ThinEvent | None = decode(raw.value, max_bytes=max_bytes, known_types=known)
            except PoisonMessage as exc:
                event = None
                poison.append((raw, exc))
            admitted.append((raw, event))
        self._work.admit(admitted)
        for raw, error in poison:
            self._metrics.poison(error.code)
            self._dead.send([raw], error.code, error.message)
        for topic, n in counts.items():  # searchsync_events_consumed_total, once per topic
            self._metrics.consumed(topic, n)

    async def _drain(self, deadline_s: float) -> None:
        """Finish what is in flight within the deadline; the rest stays uncommitted."""
        deadline = self._clock() + deadline_s
        while (busy := self._batches.tasks() | self._dead.tasks) and self._clock() < deadline:
            await asyncio.wait(busy, timeout=max(0.0, deadline - self._clock()))
        for task in self._batches.tasks() | self._dead.tasks:
            task.cancel()

    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self._processor.released(partitions)  # a new assignment takes their owner epochs anew
        self._work.assign(partitions)
        self._metrics.set_assigned(len(self._work.assigned))

    async def revoking(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Stop taking work for `partitions`, let their works in flight finish within the drain
        deadline, and return their offsets to commit. Runs on the loop while the consumer thread
        waits: never calls the intake."""
        revoked = set(partitions)
        self._work.revoke(revoked)
        await self._batches.wait_for(revoked, self._clock() + self._drain_s)
        self._work.revoke(revoked)  # the retries the drained works scheduled meanwhile
        offsets = self._work.ledger.to_commit()
        await self._flush_state(self._drain_s)
        return {tp: o for tp, o in offsets.items() if tp in revoked}

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None:
        """The partitions are gone; a lost one commits nothing."""
        if lost:
            self._work.revoke(set(partitions))
        self._processor.released(partitions)
        for tp in partitions:
            self._work.forget(tp)
            self._paused.discard(tp)
            self._metrics.forget_partition(*tp)
        self._metrics.set_assigned(len(self._work.assigned))

    async def _flush_state(self, deadline_s: float) -> None:
        try:
            await asyncio.wait_for(self._outcomes.flush(), max(0.1, deadline_s))
        except TimeoutError:
            log.warning("projection state not written within %.1fs", deadline_s)

    def _watch_fence(self) -> None:
        """Re-check the schema fence on its timer; once nothing is fenced, held works retry now."""
        fence = self._fence
        if (self._fence_check is None or self._fence_check.done()) and fence.due():
            self._fence_check = asyncio.create_task(fence.refresh_if_due())
        if self._work.waiting(ErrorCode.SCHEMA_FENCED) and not fence.holding():
            self._work.release_now((ErrorCode.SCHEMA_FENCED,))

    async def commit(self, intake: KafkaIntake) -> None:
        offsets = self.ledger.to_commit()
        if not offsets:
            return
        for tp, ok in (await intake.commit(offsets)).items():
            self._metrics.commit(ok)
            if ok:
                self.ledger.mark_committed(tp, offsets[tp])

    async def _adjust_pause(self, intake: KafkaIntake) -> None:
        """Pause every assigned partition while there is pressure; resume once it is gone."""
        reason, assigned = self._work.pressure(), self._work.assigned
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

    async def _report_lag(self, intake: KafkaIntake) -> None:
        if not self._work.assigned:
            return
        highs = await intake.high_watermarks(sorted(self._work.assigned))
        for tp, high in highs.items():
            position = self.ledger.committable(tp)
            if position is not None:
                self._metrics.set_lag(tp[0], tp[1], max(0, high - position))

    def _report_gauges(self) -> None:
        self._metrics.set_pending(self.ledger.total_pending())
        self._metrics.set_processing(self._work.in_flight())
        self._metrics.set_oldest_pending_age(self.oldest_unfinished_age_s())

    def oldest_unfinished_age_s(self) -> float:
        """Seconds since the oldest event holding a commit back was produced (0: none)."""
        oldest = self._work.oldest_timestamp_ms()
        return 0.0 if oldest is None else max(0.0, time.time() - oldest / 1000)

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

    @property
    def ledger(self) -> OffsetLedger:
        return self._work.ledger

    @property
    def fatal(self) -> BaseException | None:
        return self._dead.fatal
