"""`ReplayLedger` (``search_dlq_replay``) in memory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from searchsync.dlq.replays import ReplayEntry

__all__ = ["FakeReplayLedger"]


@dataclass
class FakeReplayLedger:
    """`entries` in recording order; `indexed` plays ``search_projection_state``."""

    entries: list[ReplayEntry] = field(default_factory=list)
    indexed: dict[tuple[str, str], int] = field(default_factory=dict)
    closed: bool = False

    def replays(self, dlq_topic: str) -> list[ReplayEntry]:
        return sorted(
            (e for e in self.entries if e.dlq_topic == dlq_topic), key=lambda e: e.replayed_at
        )

    def record(self, entry: ReplayEntry) -> None:
        self.entries.append(entry)

    def indexed_revisions(self, aggregate_type: str, ids: Sequence[str]) -> dict[str, int]:
        return {
            i: self.indexed[(aggregate_type, i)] for i in ids if (aggregate_type, i) in self.indexed
        }

    def close(self) -> None:
        self.closed = True
