"""Works waiting for their retry: a heap by due time, released back to the coalescer when due.

A work waits with the code of its last failure, so that the waits of one cause can end early
when the cause is gone (a schema fence lifted: docs/design.md, "Schema fence").
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from searchsync.errors import ErrorCode
from searchsync.stream.coalesce import Coalescer, Work
from searchsync.types import TopicPartition

__all__ = ["RetryQueue"]


@dataclass(order=True, slots=True)
class _Due:
    at: float
    seq: int
    work: Work = field(compare=False)
    code: ErrorCode | None = field(compare=False, default=None)


class RetryQueue:
    """Scheduled retries; a released work is ready in the coalescer again."""

    def __init__(self, coalescer: Coalescer, clock: Callable[[], float]) -> None:
        self._coalescer = coalescer
        self._clock = clock
        self._heap: list[_Due] = []
        self._seq = itertools.count()
        self._by_code: Counter[ErrorCode | None] = Counter()

    def __len__(self) -> int:
        return len(self._heap)

    def schedule(self, work: Work, delay: float, code: ErrorCode | None = None) -> None:
        heapq.heappush(self._heap, _Due(self._clock() + delay, next(self._seq), work, code))
        self._by_code[code] += 1

    def release_due(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0].at <= now:
            due = heapq.heappop(self._heap)
            self._by_code[due.code] -= 1
            self._coalescer.release(due.work)

    def release_now(self, code: ErrorCode) -> int:
        """Release at once every work that waits after a failure with `code`; how many."""
        if not self._by_code[code]:
            return 0
        released = [due for due in self._heap if due.code is code]
        self._heap = [due for due in self._heap if due.code is not code]
        heapq.heapify(self._heap)
        for due in released:
            self._coalescer.release(due.work)
        self._by_code[code] = 0
        return len(released)

    def waiting(self, code: ErrorCode) -> int:
        """How many works wait after a failure with `code`."""
        return self._by_code[code]

    def drop(self, revoked: Collection[TopicPartition]) -> None:
        """Forget the retries of works with a position in a `revoked` partition."""
        keep: list[_Due] = []
        for due in self._heap:
            if any((p.topic, p.partition) in revoked for p in due.work.positions):
                self._by_code[due.code] -= 1
                self._coalescer.release(due.work)
            else:
                keep.append(due)
        self._heap = keep
        heapq.heapify(self._heap)
