"""The unfinished messages: the offset ledger, plus what each needs to be dead-lettered.

A position is tracked when its message is taken in and finished exactly once: applied, found
already applied, superseded, or dead-lettered with an acknowledged produce (docs/design.md,
invariant 5). Finishing is the only thing that moves the commit, and it counts as progress.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from searchsync.kafka.intake import RawMessage
from searchsync.stream.ledger import OffsetLedger
from searchsync.types import Position, ThinEvent, TopicPartition

__all__ = ["Pending", "Positions"]


@dataclass(slots=True)
class Pending:
    """What is kept for an unfinished message, to dead-letter it faithfully."""

    raw: RawMessage
    event: ThinEvent | None
    first_failed_at: datetime | None = None


class Positions:
    """The ledger of one assignment and the pending message behind each unfinished position."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.ledger = OffsetLedger()
        self._pending: dict[Position, Pending] = {}
        self._clock = clock
        self._last_progress = clock()

    def track(self, pos: Position, pending: Pending) -> None:
        self.ledger.track(pos)
        self._pending[pos] = pending

    def get(self, pos: Position) -> Pending | None:
        """The pending message at `pos` (None: finished, or its partition was revoked)."""
        return self._pending.get(pos)

    def finish(self, positions: Iterable[Position]) -> None:
        for pos in positions:
            self.ledger.finish(pos)
            self._pending.pop(pos, None)
        self._last_progress = self._clock()

    def forget(self, tp: TopicPartition) -> None:
        """Drop everything of a revoked partition: its new owner re-reads it."""
        self.ledger.forget(tp)
        for pos in [p for p in self._pending if (p.topic, p.partition) == tp]:
            del self._pending[pos]

    def touch(self) -> None:
        """Count as progress (a fresh assignment starts the stall clock again)."""
        self._last_progress = self._clock()

    def stalled(self, after_s: float) -> bool:
        """Work is pending and nothing finished for more than `after_s` seconds."""
        return self.ledger.total_pending() > 0 and self._clock() - self._last_progress > after_s

    def oldest_timestamp_ms(self) -> int | None:
        """The timestamp of the oldest message holding a commit back: per partition its first
        unfinished offset, O(partitions) (never a scan of every pending message)."""
        oldest: int | None = None
        for tp in self.ledger.partitions():
            offset = self.ledger.first_unfinished(tp)
            if offset is None:
                continue
            pending = self._pending.get(Position(tp[0], tp[1], offset))
            ts = None if pending is None else pending.raw.timestamp_ms
            if ts and (oldest is None or ts < oldest):
                oldest = ts
        return oldest
