"""A rebuild's sweep after a schema change: once every old consumer has seen its fence (two check
intervals and a margin), append a REBUILD at its stored version for every document of another
schema version in the new index (the catch-up group rewrites it; the rebuild never writes one
itself, invariant 9), until a pass finds none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from searchsync.config import Settings
from searchsync.mysql.outbox import Outbox
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.records import RebuildRecord
from searchsync.projection import Projector
from searchsync.search.port import SearchEngine

SWEEP_PASSES = 3
SETTLE_MARGIN_S = 1.0
"""Beyond two fence intervals: a batch that passed the gate just before the fence went up."""


@dataclass
class Sweep:
    _settings: Settings
    _reader: SearchEngine
    _outbox: Outbox
    _progress: Progress
    _catchup_failure: Callable[[], str | None]  # why the catch-up consumer stopped (None: runs)
    _sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def run(self, projector: Projector, record: RebuildRecord) -> str:
        """Sweep the rebuild's new index; a note for the summary when some documents remain
        (the redeployed group applies their REBUILDs)."""
        index, version = record.target_index, projector.schema_version
        await self._sleep(2 * self._settings.pipeline.fence_check_interval_s + SETTLE_MARGIN_S)
        for attempt in range(1, SWEEP_PASSES + 1):
            await self._reader.refresh(index)
            stale = await self._reader.other_schema(index, version)
            for doc_id, stored in stale:
                await self._outbox.append_rebuild(record.aggregate_type, doc_id, stored)
            self._progress.step(
                "sweep",
                f"pass {attempt}: {len(stale)} documents of another schema version in "
                f"{index}" + (": REBUILD events appended" if stale else ""),
            )
            if not stale:
                return ""
            left = await self._wait_rewritten(index, version, {i for i, _ in stale})
            if left:
                return (
                    f"; {len(left)} documents of another schema version were still in {index} "
                    "after the sweep (their REBUILD events are on the topic: the redeployed group "
                    f"rewrites them), e.g. {sorted(left)[:5]}"
                )
        return ""

    async def _wait_rewritten(self, index: str, version: int, ids: set[str]) -> set[str]:
        """Wait until none of `ids` is of another schema version in `index` (their REBUILDs reach
        the topic through Debezium, then the catch-up group); the ids still stale at the end."""
        r = self._settings.rebuild
        deadline = time.monotonic() + r.catchup_timeout_s
        while True:
            await self._reader.refresh(index)
            left = ids & {i for i, _ in await self._reader.other_schema(index, version)}
            if not left or self._catchup_failure() is not None or time.monotonic() >= deadline:
                return left
            await self._sleep(r.poll_interval_s)
