"""Healing through the outbox, never by writing Elasticsearch (docs/design.md, invariant 9).

Every confirmed finding becomes one REBUILD outbox event (`searchsync.mysql.outbox.append_outbox`)
in its own small transaction, at most `appends_per_s` per second. An orphan (live document at
version v, row gone) first raises the id's revision floor to v + 1 in the same transaction, so the
consumer writes a tombstone at v + 1.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from searchsync.mysql.outbox import Outbox
from searchsync.ops.repair.load import LagGuard
from searchsync.ops.repair.model import Finding, FindingKind

__all__ = ["Healer"]


class Healer:
    """Turns confirmed findings into outbox appends, rate-limited; `dry_run` appends nothing.

    With a `guard`, the live group's lag is checked before each batch of `batch_size` appends
    (`LagGuard.wait`); `appended` counts every append so far.
    """

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
        self._guard = guard
        self._batch_size = batch_size
        self.appended = 0
        self._outbox = outbox
        self._interval = 1.0 / appends_per_s
        self._dry_run = dry_run
        self._sleep = sleep
        self._clock = clock
        self._next_at = 0.0

    async def heal(self, findings: list[Finding]) -> int:
        """Append one REBUILD per id (several findings of one id share it); the count appended."""
        if self._dry_run:
            return 0
        by_id: dict[tuple[str, str], Finding] = {}
        for f in findings:
            by_id.setdefault((f.aggregate_type, f.id), f)
        for n, finding in enumerate(by_id.values()):
            if self._guard is not None and n % self._batch_size == 0:
                await self._guard.wait(f"appending REBUILD events ({len(by_id) - n} to go)")
            wait = self._next_at - self._clock()
            if wait > 0:
                await self._sleep(wait)
            self._next_at = max(self._clock(), self._next_at) + self._interval
            if finding.kind is FindingKind.ORPHAN:
                assert finding.doc_version is not None
                await self._outbox.append_orphan(
                    finding.aggregate_type, finding.id, finding.doc_version + 1
                )
            else:
                assert finding.row_revision is not None
                await self._outbox.append_rebuild(
                    finding.aggregate_type, finding.id, finding.row_revision
                )
            self.appended += 1
        return len(by_id)
