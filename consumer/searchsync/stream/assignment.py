"""The partitions assigned to this member, and what a rebalance does to the work of each.

A revoke stops taking work for its partitions, lets their in-flight works finish within a
deadline and hands back the offsets to commit (the first unfinished offset: docs/design.md,
invariant 5); a lost partition commits nothing. Either way, what was queued or waiting for a
retry is dropped: the partition's new owner reads it again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from searchsync.observability.metrics import Metrics
from searchsync.stream.backpressure import Backpressure
from searchsync.stream.batches import Batches
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.positions import Positions
from searchsync.stream.retries import RetryQueue
from searchsync.types import TopicPartition

__all__ = ["Assignment"]


class Assignment:
    """The assigned partitions (`partitions`, shared with the steps that check it)."""

    def __init__(
        self,
        *,
        positions: Positions,
        coalescer: Coalescer,
        retries: RetryQueue,
        backpressure: Backpressure,
        metrics: Metrics,
        clock: Callable[[], float],
        drain_s: float,
    ) -> None:
        self.partitions: set[TopicPartition] = set()
        self._positions = positions
        self._coalescer = coalescer
        self._retries = retries
        self._backpressure = backpressure
        self._metrics = metrics
        self._clock = clock
        self._drain_s = drain_s

    def assigned(self, partitions: Sequence[TopicPartition]) -> None:
        self.partitions.update(partitions)
        self._metrics.set_assigned(len(self.partitions))
        self._positions.touch()

    async def revoking(
        self, partitions: Sequence[TopicPartition], batches: Batches
    ) -> dict[TopicPartition, int]:
        """Drop the waiting work of `partitions`, wait for their works in flight, and return
        their offsets to commit."""
        revoked = set(partitions)
        self._drop_waiting(revoked)
        await batches.wait_for(revoked, self._clock() + self._drain_s)
        self._drop_waiting(revoked)  # retries the drained works scheduled meanwhile
        offsets = self._positions.ledger.to_commit()
        return {tp: o for tp, o in offsets.items() if tp in revoked}

    def revoked(self, partitions: Sequence[TopicPartition], *, lost: bool) -> None:
        for tp in partitions:
            if lost:
                self._drop_waiting({tp})
            self._positions.forget(tp)
            self.partitions.discard(tp)
            self._backpressure.forget(tp)
            self._metrics.forget_partition(*tp)
        self._metrics.set_assigned(len(self.partitions))

    def _drop_waiting(self, revoked: set[TopicPartition]) -> None:
        """Forget the scheduled retries and queued events of `revoked` partitions."""
        self._retries.drop(revoked)
        for topic, partition in revoked:
            self._coalescer.drop_partition(topic, partition)
