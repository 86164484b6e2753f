"""The offset ledger: the offset safe to commit is the first one not finished, never the highest
finished (docs/design.md, invariant 5). Only offsets actually consumed are tracked: they rise, with
gaps (transaction markers, compaction)."""

from __future__ import annotations

import bisect

from searchsync.types import RawMessage, TopicPartition


class PartitionLedger:
    """The consumed offsets of one partition until each is finished.

    Memory is bounded by twice the unfinished offsets plus O(1): only unfinished offsets are kept
    (ascending), behind a head that finishing the lowest one moves; the finished prefix is dropped
    once as long as the rest. Inside the tracked range a finished offset and a gap are alike:
    finishing either is a no-op.
    """

    __slots__ = ("_first", "_head", "_last", "_open")

    def __init__(self) -> None:
        # `_open[_head:]`: the unfinished offsets, ascending (`track` only appends a larger one);
        # `_open[:_head]`: finished ones not dropped yet.
        self._open: list[int] = []
        self._head = 0
        self._first: int | None = None
        self._last: int | None = None

    def track(self, offset: int) -> None:
        """Record a consumed offset, above every offset tracked before (ValueError otherwise)."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        if self._last is not None and offset <= self._last:
            raise ValueError(f"offset {offset} tracked after {self._last}: offsets must rise")
        if self._first is None:
            self._first = offset
        self._last = offset
        self._open.append(offset)

    def covers(self, offset: int) -> bool:
        """`offset` lies in the tracked range, so `finish(offset)` is valid."""
        first, last = self._first, self._last
        return first is not None and last is not None and first <= offset <= last

    def finish(self, offset: int) -> None:
        """Mark a tracked offset finished (twice is harmless); ValueError outside the tracked
        range."""
        if not self.covers(offset):
            raise ValueError(
                f"offset {offset} was never tracked (tracked range {self._first}..{self._last})"
            )
        unfinished, head = self._open, self._head
        i = bisect.bisect_left(unfinished, offset, head)
        if i == len(unfinished) or unfinished[i] != offset:
            return
        if i != head:
            del unfinished[i]
            return
        head += 1
        if 2 * head >= len(unfinished):  # the finished prefix is as long as the rest: drop it
            del unfinished[:head]
            head = 0
        self._head = head

    def committable(self) -> int | None:
        """The lowest unfinished offset, else last tracked + 1; None before anything was tracked."""
        first = self.first_unfinished()
        if first is not None or self._last is None:
            return first
        return self._last + 1

    def first_unfinished(self) -> int | None:
        return self._open[self._head] if self._head < len(self._open) else None

    def pending(self) -> int:
        return len(self._open) - self._head


class OffsetLedger:
    """The ledgers of every assigned partition, and what was committed for each.

    `finish` ignores a position of a partition forgotten on revoke or loss, or outside the range
    tracked since its (re)assignment: stale work whose offsets belong to the current owner. Ignoring
    can only hold the commit back, never move it forward.
    """

    __slots__ = ("_committed", "_ledgers")

    def __init__(self) -> None:
        self._ledgers: dict[TopicPartition, PartitionLedger] = {}
        self._committed: dict[TopicPartition, int] = {}

    def track(self, pos: RawMessage) -> None:
        self.ledger_of((pos.topic, pos.partition)).track(pos.offset)

    def ledger_of(self, tp: TopicPartition) -> PartitionLedger:
        ledger = self._ledgers.get(tp)
        if ledger is None:
            ledger = self._ledgers[tp] = PartitionLedger()
        return ledger

    def finish(self, pos: RawMessage) -> bool:
        """Mark a position finished; False when it was ignored."""
        ledger = self._ledgers.get((pos.topic, pos.partition))
        if ledger is None or not ledger.covers(pos.offset):
            return False
        ledger.finish(pos.offset)
        return True

    def to_commit(self) -> dict[TopicPartition, int]:
        """The partitions whose committable offset passed the last commit, with it."""
        out: dict[TopicPartition, int] = {}
        for tp, ledger in self._ledgers.items():
            offset = ledger.committable()
            if offset is not None and offset > self._committed.get(tp, -1):
                out[tp] = offset
        return out

    def mark_committed(self, tp: TopicPartition, offset: int) -> None:
        """Record a successful commit: never backwards (callbacks may come late or out of order); a
        forgotten partition's is dropped."""
        if tp not in self._ledgers:
            return
        if offset > self._committed.get(tp, -1):
            self._committed[tp] = offset

    def forget(self, tp: TopicPartition) -> None:
        """Drop a partition on revoke or loss; its late finishes are ignored."""
        self._ledgers.pop(tp, None)
        self._committed.pop(tp, None)

    def committable(self, tp: TopicPartition) -> int | None:
        ledger = self._ledgers.get(tp)
        return None if ledger is None else ledger.committable()

    def pending(self, tp: TopicPartition) -> int:
        ledger = self._ledgers.get(tp)
        return 0 if ledger is None else ledger.pending()

    def total_pending(self) -> int:
        return sum(ledger.pending() for ledger in self._ledgers.values())

    def partitions(self) -> list[TopicPartition]:
        return list(self._ledgers)
