"""Key coalescing: per-key order with a bounded number of works in flight. Events are thin, so the
waiting events of one key share one re-read of the row (the newest applied, the others superseded;
docs/design.md, invariant 5); a key has at most one work in flight. `is_full` is the backpressure
signal."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from searchsync.stream.work import Work
from searchsync.types import Key, RawMessage, ThinEvent


@dataclass(slots=True)
class _KeyState:
    queued: list[ThinEvent] = field(default_factory=list)
    positions: list[RawMessage] = field(default_factory=list)  # each queued event's
    running: Work | None = None
    attempts: int = 0  # already spent on the queued events (set when a work is released)


class Coalescer:
    """Groups events by key; at most one work per key and `max_in_flight` in all, keys served first
    in, first out. A key's queued events merge into one work until it starts."""

    __slots__ = ("_in_flight", "_keys", "_max_in_flight", "_max_queued", "_queued", "_ready")

    def __init__(self, max_in_flight: int, max_queued: int) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        if max_queued < 1:
            raise ValueError(f"max_queued must be >= 1, got {max_queued}")
        self._max_in_flight = max_in_flight
        self._max_queued = max_queued
        self._keys: dict[Key, _KeyState] = {}
        # Keys with queued events and no work in flight, in the order they became ready.
        self._ready: OrderedDict[Key, None] = OrderedDict()
        self._queued = 0
        self._in_flight = 0

    def add(self, event: ThinEvent, pos: RawMessage) -> None:
        key = event.key
        state = self._keys.get(key)
        if state is None:
            state = self._keys[key] = _KeyState()
        state.queued.append(event)
        state.positions.append(pos)
        self._queued += 1
        if state.running is None and key not in self._ready:
            self._ready[key] = None

    def take_ready(self, limit: int | None = None) -> list[Work]:
        """Start works for ready keys, oldest first, within the in-flight bound and `limit`."""
        room = self._max_in_flight - self._in_flight
        if limit is not None:
            room = min(room, limit)
        works: list[Work] = []
        while room > 0 and self._ready:
            key, _ = self._ready.popitem(last=False)
            state = self._keys[key]
            work = Work(key, tuple(state.queued), tuple(state.positions), state.attempts + 1)
            self._queued -= len(state.queued)
            state.queued, state.positions = [], []
            state.attempts = 0
            state.running = work
            self._in_flight += 1
            works.append(work)
            room -= 1
        return works

    def complete(self, work: Work) -> list[RawMessage]:
        """Finish a work: every position it finishes (those of a dropped partition too: the ledger
        ignores them); the key's next group becomes ready."""
        state = self._stop(work)
        if state.queued:
            self._ready[work.key] = None
        else:
            del self._keys[work.key]
        return list(work.positions)

    def release(self, work: Work) -> None:
        """Give a work back, when its retry is due, merged with the events that waited behind it;
        the next work counts its attempts."""
        state = self._stop(work)
        state.queued[:0] = work.events
        state.positions[:0] = work.positions
        self._queued += len(work.events)
        state.attempts = work.attempts
        self._ready[work.key] = None

    def drop_partition(self, topic: str, partition: int) -> int:
        """Forget a revoked partition's queued events (works in flight finish normally); how
        many."""
        dropped = 0
        for key in list(self._keys):
            state = self._keys[key]
            kept = [
                i
                for i, pos in enumerate(state.positions)
                if pos.partition != partition or pos.topic != topic
            ]
            removed = len(state.queued) - len(kept)
            if removed == 0:
                continue
            dropped += removed
            state.queued = [state.queued[i] for i in kept]
            state.positions = [state.positions[i] for i in kept]
            if not kept:
                state.attempts = 0
                self._ready.pop(key, None)
                if state.running is None:
                    del self._keys[key]
        self._queued -= dropped
        return dropped

    def in_flight(self) -> int:
        return self._in_flight

    def ready(self) -> int:
        return len(self._ready)

    def queued(self) -> int:
        return self._queued

    def is_full(self) -> bool:
        """`max_queued` events or more wait: intake should pause."""
        return self._queued >= self._max_queued

    def _stop(self, work: Work) -> _KeyState:
        """`work` is no longer in flight: its key's state (ValueError unless it was)."""
        state = self._keys.get(work.key)
        if state is None or state.running is not work:
            raise ValueError(f"work for {work.key} is not in flight (completed or released?)")
        state.running = None
        self._in_flight -= 1
        return state
