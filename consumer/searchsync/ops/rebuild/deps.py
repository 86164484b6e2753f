"""What a rebuild is built on (`RebuildDeps`) and the verbs the steps after the backfill use
(`RebuildSteps`, implemented by `searchsync.ops.rebuild.runner.Rebuilder`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from searchsync.config import Settings
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.outbox import Outbox
from searchsync.mysql.truth import Truth
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.rebuild.catchup import CatchUp, LagWatch
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.reader import IndexReader
from searchsync.ops.rebuild.state import RebuildRecord, RebuildStateStore
from searchsync.projection import ProjectorRegistry
from searchsync.search.port import IndexAdmin
from searchsync.search.sink import SearchIndex

__all__ = ["RebuildDeps", "RebuildSteps"]


@dataclass(slots=True)
class RebuildDeps:
    settings: Settings
    registry: ProjectorRegistry
    index_admin: IndexAdmin
    writer: SearchIndex  # require_alias=false: the one writer that addresses a physical index
    reader: IndexReader
    truth: Truth
    kafka: KafkaAdmin
    state: RebuildStateStore
    catchup: Callable[[RebuildRecord, list[str]], CatchUp]  # (record, topics) -> catch-up group
    metrics: RebuildMetrics
    progress: Progress
    outbox: Outbox  # REBUILD events for the sweep after a schema-changing swap
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class RebuildSteps(Protocol):
    """A running rebuild as the steps after its backfill see it."""

    @property
    def d(self) -> RebuildDeps: ...

    async def save(self, record: RebuildRecord, **changes: Any) -> RebuildRecord: ...

    def lag_watch(self, alias: str) -> LagWatch: ...

    async def start_catchup(self, record: RebuildRecord) -> CatchUp: ...

    async def stop_catchup(self) -> None: ...

    def seed(self) -> int: ...
