"""Taking consumed messages in: each is decoded, its position tracked, and its event handed to
the coalescer, or, when it cannot be decoded, to the dead letters with its reason. A position is
tracked before anything can finish it (docs/design.md, invariant 5). Messages of partitions no
longer assigned (fetched before a revoke) are left to the new owner, and not counted."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import datetime

from searchsync.errors import PoisonMessage
from searchsync.events import decode
from searchsync.kafka.intake import RawMessage
from searchsync.observability.metrics import Metrics
from searchsync.stream.coalesce import Coalescer
from searchsync.stream.dead_letters import DeadLetters
from searchsync.stream.positions import Pending, Positions
from searchsync.types import Position, TopicPartition

__all__ = ["Admission"]


class Admission:
    def __init__(
        self,
        *,
        assigned: Collection[TopicPartition],
        positions: Positions,
        coalescer: Coalescer,
        dead_letters: DeadLetters,
        metrics: Metrics,
        max_event_bytes: int,
        known_types: Collection[str],
        wall_clock: Callable[[], datetime],
    ) -> None:
        """`assigned` is the live set of assigned partitions (read, never changed, here)."""
        self._assigned = assigned
        self._positions = positions
        self._coalescer = coalescer
        self._dead = dead_letters
        self._metrics = metrics
        self._max_bytes = max_event_bytes
        self._known = known_types
        self._wall = wall_clock

    def take(self, messages: Sequence[RawMessage]) -> None:
        for raw in messages:
            self._one(raw)
        self._count(messages)

    def _one(self, raw: RawMessage) -> None:
        if (raw.topic, raw.partition) not in self._assigned:
            return
        pos = Position(raw.topic, raw.partition, raw.offset)
        try:
            event = decode(raw.value, max_bytes=self._max_bytes, known_types=self._known)
        except PoisonMessage as exc:
            self._positions.track(pos, Pending(raw, None, self._wall()))
            self._metrics.poison(exc.code)
            self._dead.send([pos], exc.code, exc.message, attempts=1)
            return
        self._positions.track(pos, Pending(raw, event))
        self._coalescer.add(event, pos)

    def _count(self, messages: Sequence[RawMessage]) -> None:
        """`searchsync_events_consumed_total`, once per topic per consume."""
        assigned = self._assigned
        counts: dict[str, int] = {}
        for raw in messages:
            if (raw.topic, raw.partition) in assigned:
                counts[raw.topic] = counts.get(raw.topic, 0) + 1
        for topic, n in counts.items():
            self._metrics.consumed(topic, n)
