"""What a rebuild is built on (`RebuildDeps`), and `RebuildSteps`: the verbs its steps share,
the base of `searchsync.ops.rebuild.runner.Rebuilder`."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from searchsync.clock import utc_now
from searchsync.config import Settings
from searchsync.errors import OperationRefused
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.outbox import Outbox
from searchsync.mysql.truth import Truth
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.rebuild.plan import high_watermarks
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.state import RebuildRecord, RebuildStateStore, Status, Watermark
from searchsync.projection import ProjectorRegistry
from searchsync.search.port import IndexAdmin, SearchEngine
from searchsync.types import TopicPartition


@dataclass(slots=True)
class RebuildDeps:
    settings: Settings
    registry: ProjectorRegistry
    index_admin: IndexAdmin
    writer: SearchEngine  # require_alias=false: the one writer that addresses a physical index
    reader: SearchEngine  # the same, reading the physical index
    truth: Truth
    kafka: KafkaAdmin
    state: RebuildStateStore
    # (record, topics, stop) -> the catch-up group's consumer until `stop` is set; its exit code
    catchup: Callable[[RebuildRecord, list[str], asyncio.Event], Coroutine[Any, Any, int]]
    metrics: RebuildMetrics
    progress: Progress
    outbox: Outbox  # REBUILD events for the sweep after a schema-changing swap
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


class RebuildSteps:
    """A running rebuild: its dependencies `d`, its saves, its one catch-up group and the waits
    for consumer groups' offsets."""

    def __init__(self, deps: RebuildDeps) -> None:
        self.d = deps
        self._catchup: asyncio.Task[int] | None = None
        self._stop = asyncio.Event()

    async def save(self, record: RebuildRecord, **changes: Any) -> RebuildRecord:
        """Store `record` with `changes`, stamped (and marked finished by a final status)."""
        now = utc_now()
        status = changes.get("status", record.status)
        finished_at = now if isinstance(status, Status) and status.finished else None
        updated = dataclasses.replace(record, updated_at=now, finished_at=finished_at, **changes)
        await self.d.state.save(updated)
        return updated

    async def committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        found = await asyncio.to_thread(self.d.kafka.committed, group, list(partitions))
        return {tp: found.get(tp) or 0 for tp in partitions}

    async def catch_up(self, record: RebuildRecord) -> dict[TopicPartition, int]:
        """Wait until the catch-up group reached the topics' ends as of now; those ends."""
        topics = sorted({t for t, _ in record.watermark})
        target = await asyncio.to_thread(high_watermarks, self.d.kafka, topics)
        await self.wait_until(record, record.catchup_group, target)
        return target

    async def wait_until(self, record: RebuildRecord, group: str, target: Watermark) -> None:
        """Return once `group` (the catch-up group, or the live group) committed at least `target`
        on every partition, the lag shown as ``reindex_incremental_lag``; `OperationRefused` at
        its timeout, or when the catch-up consumer stopped by itself."""
        r = self.d.settings.rebuild
        live = group == self.d.settings.kafka.group_id
        timeout_s = r.live_wait_timeout_s if live else r.catchup_timeout_s
        what = f"{'live' if live else 'catch-up'} group {group}"
        deadline = time.monotonic() + timeout_s
        partitions = sorted(target)
        while True:
            done = await self.committed(group, partitions)
            lag = sum(max(0, target[tp] - done[tp]) for tp in partitions)
            self.d.metrics.set_incremental_lag(record.alias, lag)
            if lag == 0:
                return
            why = self.catchup_failure()
            if why is not None:
                raise OperationRefused(f"{what}: {why}")
            if time.monotonic() >= deadline:
                raise OperationRefused(
                    f"{what}: still {lag} events behind after {timeout_s:.0f}s; the progress is "
                    "saved: run the rebuild again with --resume"
                )
            await asyncio.sleep(r.poll_interval_s)

    async def start_catchup(self, record: RebuildRecord) -> None:
        """Start the record's catch-up group, unless it runs."""
        if self._catchup is None:
            topics = sorted({t for t, _ in record.watermark})
            self._stop.clear()
            self._catchup = asyncio.create_task(self.d.catchup(record, topics, self._stop))
            self.d.progress.step("catch-up", f"group {record.catchup_group} started")

    def catchup_failure(self) -> str | None:
        """Why the catch-up consumer stopped by itself, if it did."""
        task = self._catchup
        if task is None or not task.done():
            return None
        if task.cancelled():
            return "the catch-up consumer was cancelled"
        exc = task.exception()
        if exc is not None:
            return f"the catch-up consumer failed: {exc}"
        return f"the catch-up consumer stopped with exit code {task.result()} (see its log)"

    async def stop_catchup(self) -> None:
        """Let the catch-up consumer drain, commit its finished prefix and leave the group."""
        task, self._catchup = self._catchup, None
        if task is not None:
            self._stop.set()
            await task
