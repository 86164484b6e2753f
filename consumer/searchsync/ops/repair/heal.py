"""Healing through the outbox, never by writing Elasticsearch (invariant 9): each confirmed
finding becomes one REBUILD outbox event in its own small transaction, at most `appends_per_s`.
An orphan (live document at v, row gone) raises the id's revision floor to v + 1 first, so the
consumer writes a tombstone at v + 1."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from searchsync.mysql.outbox import Outbox
from searchsync.ops.repair.load import LagGuard, LiveLagTooHigh
from searchsync.ops.repair.model import Finding, FindingKind

__all__ = ["Healer"]


class Healer:
    """Turns findings into rate-limited outbox appends (`dry_run`: none); with a `guard`, the
    live lag is checked before each batch of `batch_size` appends."""

    def __init__(
        self,
        outbox: Outbox,
        *,
        appends_per_s: float,
        dry_run: bool = False,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        guard: LagGuard | None = None,
        batch_size: int = 100,
    ) -> None:
        if appends_per_s <= 0:
            raise ValueError("appends_per_s must be > 0")
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._outbox = outbox
        self._interval = 1.0 / appends_per_s
        self._dry_run = dry_run
        self._sleep = sleep
        self._clock = clock
        self._guard = guard
        self._batch_size = batch_size
        self._next_at = 0.0

    async def heal(self, findings: list[Finding]) -> tuple[int, str | None]:
        """Append one REBUILD per id (several findings of one id share it); the count appended,
        and why it stopped early (the live lag stayed too high) or None."""
        if self._dry_run:
            return 0, None
        by_id: dict[tuple[str, str], Finding] = {}
        for f in findings:
            by_id.setdefault((f.aggregate_type, f.id), f)
        for n, f in enumerate(by_id.values()):
            if self._guard is not None and n % self._batch_size == 0:
                try:
                    await self._guard.wait(f"appending REBUILD events ({len(by_id) - n} to go)")
                except LiveLagTooHigh as exc:
                    return n, str(exc)
            wait = self._next_at - self._clock()
            if wait > 0:
                await self._sleep(wait)
            self._next_at = max(self._clock(), self._next_at) + self._interval
            if f.kind is FindingKind.ORPHAN:
                assert f.doc_version is not None
                await self._outbox.append_orphan(f.aggregate_type, f.id, f.doc_version + 1)
            else:
                assert f.row_revision is not None
                await self._outbox.append_rebuild(f.aggregate_type, f.id, f.row_revision)
        return len(by_id), None
