"""Healing through the outbox, never by writing Elasticsearch (invariant 9): each confirmed
finding becomes one REBUILD outbox event in its own small transaction, at most `appends_per_s`.
An orphan (live document at v, row gone) raises the id's revision floor to v + 1 first, so the
consumer writes a tombstone at v + 1."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field

from searchsync.errors import LiveLagTooHigh
from searchsync.mysql.outbox import Outbox
from searchsync.ops.repair.load import LagGuard, TokenBucket
from searchsync.ops.repair.model import Finding, FindingKind


@dataclass(slots=True)
class Healer:
    """Turns findings into rate-limited outbox appends (`dry_run`: none); with a `guard`, the
    live lag is checked before each batch of `batch_size` appends."""

    outbox: Outbox
    _: KW_ONLY
    appends_per_s: float
    dry_run: bool = False
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    clock: Callable[[], float] = time.monotonic
    guard: LagGuard | None = None
    batch_size: int = 100
    _pace: TokenBucket = field(init=False)

    def __post_init__(self) -> None:
        if self.appends_per_s <= 0:
            raise ValueError("appends_per_s must be > 0")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self._pace = TokenBucket(self.appends_per_s, burst=1.0, clock=self.clock, sleep=self.sleep)

    async def heal(self, findings: list[Finding]) -> tuple[int, str | None]:
        """Append one REBUILD per id (several findings of one id share it); the count appended,
        and why it stopped early (the live lag stayed too high) or None."""
        if self.dry_run:
            return 0, None
        by_id: dict[tuple[str, str], Finding] = {}
        for f in findings:
            by_id.setdefault((f.aggregate_type, f.id), f)
        for n, f in enumerate(by_id.values()):
            if self.guard is not None and n % self.batch_size == 0:
                try:
                    await self.guard.wait(f"appending REBUILD events ({len(by_id) - n} to go)")
                except LiveLagTooHigh as exc:
                    return n, str(exc)
            await self._pace.take(1)
            if f.kind is FindingKind.ORPHAN:
                assert f.doc_version is not None
                await self.outbox.append_orphan(f.aggregate_type, f.id, f.doc_version + 1)
            else:
                assert f.row_revision is not None
                await self.outbox.append_rebuild(f.aggregate_type, f.id, f.row_revision)
        return len(by_id), None
