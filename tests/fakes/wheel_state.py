"""`WheelState` (``search_repair_epoch``, ``search_repair_bucket``) in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from searchsync.ops.repair.generations import BucketState, Epoch

__all__ = ["FakeWheelState"]


class FakeWheelState:
    def __init__(self) -> None:
        self.epochs: dict[str, list[Epoch]] = {}
        self.states: dict[tuple[str, int], dict[int, BucketState]] = {}

    async def current_epoch(self, aggregate_type: str) -> Epoch | None:
        epochs = self.epochs.get(aggregate_type)
        return epochs[-1] if epochs else None

    async def start_epoch(self, aggregate_type: str, m: int, canon: int, now: datetime) -> Epoch:
        epochs = self.epochs.setdefault(aggregate_type, [])
        epoch = Epoch(aggregate_type, len(epochs) + 1, m, canon)
        epochs.append(epoch)
        self.states[(aggregate_type, epoch.epoch)] = {b: BucketState(b) for b in range(m)}
        return epoch

    async def buckets(self, epoch: Epoch) -> dict[int, BucketState]:
        return dict(self.states[(epoch.aggregate_type, epoch.epoch)])

    async def begin_many(self, epoch: Epoch, buckets: Sequence[int]) -> dict[int, int]:
        states = self.states[(epoch.aggregate_type, epoch.epoch)]
        for b in buckets:
            states[b] = replace(states[b], running_generation=states[b].generation + 1)
        return {b: states[b].generation + 1 for b in buckets}

    async def complete_many(self, epoch: Epoch, states: Sequence[BucketState]) -> None:
        stored = self.states[(epoch.aggregate_type, epoch.epoch)]
        for state in states:  # all or nothing, as one transaction
            if stored[state.bucket].running_generation != state.generation:
                raise RuntimeError(
                    f"bucket {state.bucket}: generation {state.generation} not running"
                )
        for state in states:
            stored[state.bucket] = replace(state, running_generation=None)
