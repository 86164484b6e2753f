"""The one owner of work state: admitted messages, key queues, works in flight, the retry schedule
and the ledger. A position is tracked before anything can finish it and finished exactly once
(applied, superseded, or its dead letter acked; docs/design.md, invariant 5): only that moves the
commit. `settle` acts on a work's outcome through the `ErrorCode` table alone (docs/design.md,
"Retry"): POISON is dead-lettered at once, TRANSIENT retried until the work's attempts are spent,
SYSTEMIC retried forever without spending them, at least every `SYSTEMIC_RETRY_CAP_S`
(`OUTAGE_RETRY_CAP_S` when unreachable). `pressure` is the one backpressure signal."""

from __future__ import annotations

import enum
import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from typing import Final

from searchsync.errors import Disposition, ErrorCode
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.ledger import OffsetLedger, PartitionLedger
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work import Work
from searchsync.types import Key, RawMessage, ThinEvent, TopicPartition

SYSTEMIC_RETRY_CAP_S: Final = 30.0  # a systemic failure is retried at least this often, forever
OUTAGE_CODES: Final = frozenset(
    {ErrorCode.ES_UNAVAILABLE, ErrorCode.ES_5XX, ErrorCode.MYSQL_UNAVAILABLE}
)
"""A dependency that could not be reached (down, restarting) rather than one shedding load: the
first write that succeeds releases every work waiting on one of these codes at once."""
OUTAGE_RETRY_CAP_S: Final = 10.0


class Settled(enum.Enum):
    """What `settle` did with a work; the caller's metrics, log lines and dead letters follow."""

    DROPPED = "dropped"  # every partition of it was revoked while it ran: nothing more
    FINISHED = "finished"  # applied now or before: its positions finished
    RETRY = "retry"  # TRANSIENT: tried again after a backoff
    SYSTEMIC = "systemic"  # tried again without spending an attempt; intake pauses
    EXHAUSTED = "exhausted"  # TRANSIENT with its attempts spent: dead-lettered
    DEAD = "dead"  # POISON: dead-lettered at once

    @property
    def counted(self) -> bool:
        """A TRANSIENT or SYSTEMIC failure (the last one too): a "retry" line and metric."""
        return self in _COUNTED


_COUNTED: Final = frozenset({Settled.RETRY, Settled.SYSTEMIC, Settled.EXHAUSTED})


class WorkState:
    """The works of one consumer, from admission to the commit. No I/O."""

    def __init__(
        self,
        *,
        max_in_flight: int,
        max_queued: int,
        retry: RetryPolicy,
        clock: Callable[[], float],
    ) -> None:
        self.ledger = OffsetLedger()
        self.assigned: set[TopicPartition] = set()
        self.degraded: ErrorCode | None = None  # the last SYSTEMIC code, until a write succeeds
        self.recovery: tuple[ErrorCode, int] | None = None
        """Set when a write ended `degraded`: the code it was, the retries released at once."""
        self._retry = retry
        self._keys = Coalescer(max_in_flight, max_queued)
        # the unfinished messages by offset, per partition (a revoked one's are dropped)
        self._pending: dict[TopicPartition, dict[int, RawMessage]] = {}
        self._due: list[tuple[float, int, Work, ErrorCode]] = []  # (at, seq, ...): a heap
        self._seq = itertools.count()
        self._waiting: Counter[ErrorCode] = Counter()
        self._systemic: dict[Key, int] = {}  # attempts that ended SYSTEMIC, per key
        self._clock = clock
        self._last_progress = clock()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self.assigned.update(partitions)
        self._last_progress = self._clock()  # a fresh assignment starts the stall clock again

    def revoke(self, partitions: Collection[TopicPartition]) -> None:
        """Drop what waits for `partitions` (queued events, scheduled retries); their works in
        flight finish on their own."""
        self._release(
            lambda work, _: any((p.topic, p.partition) in partitions for p in work.positions)
        )
        for topic, partition in partitions:
            self._keys.drop_partition(topic, partition)

    def forget(self, tp: TopicPartition) -> None:
        self.assigned.discard(tp)
        self.ledger.forget(tp)
        self._pending.pop(tp, None)

    def admit(self, batch: Iterable[tuple[RawMessage, ThinEvent | None]]) -> None:
        """Track consumed messages of assigned partitions, in consumed order, and queue their events
        (None: poison, to dead-letter); one ledger lookup per run of a partition."""
        add, ledgers = self._keys.add, self.ledger.ledger_of
        last: tuple[str, int, PartitionLedger, dict[int, RawMessage]] | None = None  # the run's
        for raw, event in batch:
            topic, partition, offset = raw.topic, raw.partition, raw.offset
            if last is None or last[1] != partition or last[0] != topic:
                tp = (topic, partition)
                last = (topic, partition, ledgers(tp), self._pending.setdefault(tp, {}))
            last[2].track(offset)
            last[3][offset] = raw
            if event is not None:
                add(event, raw)

    def take(self, limit: int) -> list[Work]:
        return self._keys.take_ready(limit)

    def owned(self, work: Work) -> bool:
        assigned, positions = self.assigned, work.positions
        if len(positions) == 1:  # most works: one event
            return (positions[0].topic, positions[0].partition) in assigned
        return any((p.topic, p.partition) in assigned for p in positions)

    def settle(self, work: Work, stamps: list[int]) -> Settled:
        """Act on `work`'s outcome (once it ended): finish, retry or drop it. `stamps` gets the
        Kafka timestamps of the messages a finished work wrote a document for. A failed work's
        `message` becomes the one its dead letter and failure record carry."""
        if not self.owned(work):
            # Every partition of the work was revoked while it ran: its offsets belong to the new
            # owner, who re-reads them. No retry, no dead letter, no budget spent here.
            self.drop(work)
            return Settled.DROPPED
        code = work.code
        if code is None:
            if work.document is None:  # an event that only fans out: its job is recorded
                self.finish(work)
                return Settled.FINISHED
            if self.degraded is not None:  # a write succeeded
                was, self.degraded = self.degraded, None
                self.recovery = (was, self.release_now(OUTAGE_CODES))
            stamps.extend(self.finish(work))
            return Settled.FINISHED
        message = work.message = work.message or code.value
        what = work.disposition
        spent = self._systemic.get(work.key, 0) if self._systemic else 0
        if what is Disposition.SYSTEMIC:
            cap = OUTAGE_RETRY_CAP_S if code in OUTAGE_CODES else SYSTEMIC_RETRY_CAP_S
            self.retry(work, min(self._retry.delay(spent + 1), cap), code, systemic=True)
            return Settled.SYSTEMIC
        if what is Disposition.POISON:
            self.drop(work)  # the key moves on; its positions finish on the ack
            return Settled.DEAD
        own = work.attempts - spent  # attempts that ended SYSTEMIC are not the work's own
        if own < self._retry.max_attempts:
            self.retry(work, self._retry.delay(own), code, systemic=False)
            return Settled.RETRY
        work.message = f"retries exhausted after {own} attempts: {message}"
        self.drop(work)  # the key moves on; its positions finish on the ack
        return Settled.EXHAUSTED

    def finish(self, work: Work) -> list[int]:
        """`work` applied (or found applied): its positions finish. The Kafka timestamps of the
        tracked messages it finished."""
        self.drop(work)
        ledger, pending = self.ledger, self._pending
        stamps: list[int] = []
        for pos in work.positions:
            ledger.finish(pos)
            unfinished = pending.get((pos.topic, pos.partition))
            if unfinished is None or unfinished.pop(pos.offset, None) is None:
                continue  # its partition was revoked
            if pos.timestamp_ms is not None:
                stamps.append(pos.timestamp_ms)
        self._last_progress = self._clock()
        return stamps

    def retry(self, work: Work, delay: float, code: ErrorCode, *, systemic: bool) -> None:
        """Retry `work` after `delay`; meanwhile its key stays in flight, so nothing newer overtakes
        it. A SYSTEMIC failure spends none of the work's attempts."""
        if systemic:
            self._systemic[work.key] = self._systemic.get(work.key, 0) + 1
            self.degraded = code
        heapq.heappush(self._due, (self._clock() + delay, next(self._seq), work, code))
        self._waiting[code] += 1

    def drop(self, work: Work) -> None:
        """`work` ended without finishing its positions here: dead-lettered (they finish on
        `acked`), or all its partitions were revoked. Its key moves on."""
        if self._systemic:
            self._systemic.pop(work.key, None)
        self._keys.complete(work)

    def acked(self, pos: RawMessage) -> None:
        """The dead letter of `pos` was acknowledged: it finishes."""
        self.ledger.finish(pos)
        self._pending.get((pos.topic, pos.partition), {}).pop(pos.offset, None)
        self._last_progress = self._clock()

    def pending(self, pos: RawMessage) -> bool:
        """`pos` is unfinished (False: finished, or its partition revoked)."""
        return pos.offset in self._pending.get((pos.topic, pos.partition), ())

    def release_due(self) -> None:
        now = self._clock()
        while self._due and self._due[0][0] <= now:
            _, _, work, code = heapq.heappop(self._due)
            self._waiting[code] -= 1
            self._keys.release(work)

    def release_now(self, codes: Collection[ErrorCode]) -> int:
        """Release at once every work waiting after one of `codes`; how many."""
        if not any(self._waiting[c] for c in codes):
            return 0
        return self._release(lambda _, code: code in codes)

    def _release(self, wanted: Callable[[Work, ErrorCode], bool]) -> int:
        kept: list[tuple[float, int, Work, ErrorCode]] = []
        for due in self._due:
            if not wanted(due[2], due[3]):
                kept.append(due)
                continue
            self._waiting[due[3]] -= 1
            self._keys.release(due[2])
        released = len(self._due) - len(kept)
        if released:
            self._due = kept
            heapq.heapify(kept)
        return released

    def waiting(self, code: ErrorCode) -> int:
        return self._waiting[code]

    def pressure(self) -> str | None:
        """Why intake should pause now (None: it may run): a SYSTEMIC failure, until a write
        succeeds or nothing that failed so is left; or too many waiting events."""
        if self.degraded is not None:
            if self._due or self._keys.in_flight():
                return self.degraded
            self.degraded = None
        return "too many events waiting" if self._keys.is_full() else None

    def in_flight(self) -> int:
        return self._keys.in_flight()

    def stalled(self, after_s: float) -> bool:
        """Work is pending and nothing finished for more than `after_s`."""
        return self.ledger.total_pending() > 0 and self._clock() - self._last_progress > after_s

    def oldest_timestamp_ms(self) -> int | None:
        """The timestamp of the oldest message holding a commit back, O(partitions)."""
        oldest: int | None = None
        for tp in self.ledger.partitions():
            offset = self.ledger.ledger_of(tp).first_unfinished()
            if offset is None:
                continue
            pending = self._pending.get(tp, {}).get(offset)
            ts = None if pending is None else pending.timestamp_ms
            if ts and (oldest is None or ts < oldest):
                oldest = ts
        return oldest
