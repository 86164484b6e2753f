"""The offset ledger: which Kafka offset is safe to commit.

Work on a partition finishes out of order (key coalescing, retries, many keys in flight), but a
Kafka commit says "everything before this offset is done". So the offset to commit is the first
offset that is *not* finished: the contiguous completed prefix (docs/design.md, invariant 5).
It is never the highest finished offset, which would skip an unfinished event for
good after a crash.

Consumed offsets rise but may have gaps (transaction markers, compacted records), so the ledger
tracks the offsets it actually saw instead of assuming ``offset + 1``.
"""

from __future__ import annotations

import bisect

from searchsync.types import Position, TopicPartition


class PartitionLedger:
    """Tracks the consumed offsets of one partition until each one is finished.

    Memory is bounded by twice the number of unfinished offsets plus O(1): only unfinished
    offsets are kept (ascending), with the first and the last offset ever tracked; finishing the
    lowest one only moves a head past it, and the finished prefix is dropped once it is as long
    as the rest (offsets mostly finish in order, and deleting the first item of a long list moves
    all the others). The price of the bound is that the ledger does not remember which offsets
    *were* finished, so inside the tracked range it cannot tell a finished offset from a gap:
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
        """Record a consumed offset; it must be above every offset tracked before."""
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        if self._last is not None and offset <= self._last:
            raise ValueError(f"offset {offset} tracked after {self._last}: offsets must rise")
        if self._first is None:
            self._first = offset
        self._last = offset
        self._open.append(offset)

    def covers(self, offset: int) -> bool:
        """True when `offset` lies in the tracked range, so `finish(offset)` is valid."""
        first, last = self._first, self._last
        return first is not None and last is not None and first <= offset <= last

    def finish(self, offset: int) -> None:
        """Mark a tracked offset finished. Finishing twice is harmless.

        Raises ValueError for an offset outside the tracked range (never tracked).
        """
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
        """The offset to commit: the lowest unfinished offset, else last tracked + 1.

        None before anything was tracked (there is nothing to say about this partition).
        """
        if self._head < len(self._open):
            return self._open[self._head]
        if self._last is None:
            return None
        return self._last + 1

    def first_unfinished(self) -> int | None:
        return self._open[self._head] if self._head < len(self._open) else None

    def pending(self) -> int:
        """How many tracked offsets are not finished yet."""
        return len(self._open) - self._head


class OffsetLedger:
    """The ledgers of every assigned partition, and what has been committed for each.

    Positions of partitions the ledger does not know, because they were forgotten on revoke or
    lost, are ignored by `finish`: work started before a revoke may complete afterwards, and its
    offsets belong to whoever owns the partition now. The same holds for a position outside the
    range tracked since the partition was (re)assigned: it is stale work from an earlier
    assignment. Ignoring such a position can only hold the commit back, never move it forward.
    """

    __slots__ = ("_committed", "_ledgers")

    def __init__(self) -> None:
        self._ledgers: dict[TopicPartition, PartitionLedger] = {}
        self._committed: dict[TopicPartition, int] = {}

    def track(self, pos: Position) -> None:
        """Record a consumed position; offsets of one partition must rise."""
        self.ledger_of((pos.topic, pos.partition)).track(pos.offset)

    def ledger_of(self, tp: TopicPartition) -> PartitionLedger:
        """The ledger of `tp`, a new one if it has none (to track a run of its offsets)."""
        ledger = self._ledgers.get(tp)
        if ledger is None:
            ledger = self._ledgers[tp] = PartitionLedger()
        return ledger

    def finish(self, pos: Position) -> bool:
        """Mark a position finished. Returns False when it was ignored (see the class doc)."""
        ledger = self._ledgers.get((pos.topic, pos.partition))
        if ledger is None or not ledger.covers(pos.offset):
            return False
        ledger.finish(pos.offset)
        return True

    def to_commit(self) -> dict[TopicPartition, int]:
        """Offsets to commit now: partitions whose committable offset passed the last commit."""
        out: dict[TopicPartition, int] = {}
        for tp, ledger in self._ledgers.items():
            offset = ledger.committable()
            if offset is not None and offset > self._committed.get(tp, -1):
                out[tp] = offset
        return out

    def mark_committed(self, tp: TopicPartition, offset: int) -> None:
        """Record a successful commit. Never moves backwards; unknown partitions are ignored.

        Commit callbacks may arrive late or out of order, so a lower offset than the one already
        recorded is kept out, and a commit for a partition forgotten meanwhile is dropped.
        """
        if tp not in self._ledgers:
            return
        if offset > self._committed.get(tp, -1):
            self._committed[tp] = offset

    def forget(self, tp: TopicPartition) -> None:
        """Drop a partition on revoke or loss; its late finishes will be ignored."""
        self._ledgers.pop(tp, None)
        self._committed.pop(tp, None)

    def committable(self, tp: TopicPartition) -> int | None:
        """The partition's committable offset, whether or not it was committed already."""
        ledger = self._ledgers.get(tp)
        return None if ledger is None else ledger.committable()

    def first_unfinished(self, tp: TopicPartition) -> int | None:
        """The lowest unfinished offset of one partition (None: none, or unknown)."""
        ledger = self._ledgers.get(tp)
        return None if ledger is None else ledger.first_unfinished()

    def pending(self, tp: TopicPartition) -> int:
        """Unfinished offsets of one partition (0 for an unknown partition)."""
        ledger = self._ledgers.get(tp)
        return 0 if ledger is None else ledger.pending()

    def total_pending(self) -> int:
        """Unfinished offsets over every partition."""
        return sum(ledger.pending() for ledger in self._ledgers.values())

    def partitions(self) -> list[TopicPartition]:
        """The partitions the ledger currently tracks, in the order they were first seen."""
        return list(self._ledgers)
