"""A rebuild's catch-up group: its consumer (started once, drained once) and the waits until a
consumer group (the catch-up group, or the live group) committed as far as a target; the sweep;
and the end of a load's part: has the live group passed the part's watermark?

The sweep, after a schema change: once every old consumer has seen its fence (two check intervals
and a margin), append a REBUILD at its stored version for every document of another schema
version in the new index (the catch-up group rewrites it; the rebuild never writes one itself,
invariant 9), until a pass finds none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchsync.config import Settings
from searchsync.errors import OperationRefused
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.outbox import Outbox
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.rebuild.plan import below_log_start, high_watermarks
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.records import RebuildRecord, Watermark
from searchsync.projection import Projector
from searchsync.search.port import SearchEngine
from searchsync.types import TopicPartition

SWEEP_PASSES = 3
SETTLE_MARGIN_S = 1.0
"""Beyond two fence intervals: a batch that passed the gate just before the fence went up."""

CatchupRun = Callable[[RebuildRecord, list[str], asyncio.Event], Coroutine[Any, Any, int]]
"""(record, topics, stop) -> the catch-up group's consumer until `stop` is set; its exit code."""


@dataclass
class CatchupGroup:
    _settings: Settings
    _kafka: KafkaAdmin
    _run: CatchupRun
    _metrics: RebuildMetrics
    _progress: Progress
    _reader: SearchEngine
    _outbox: Outbox  # takes the sweep's REBUILD events
    _sleep: Callable[[float], Awaitable[None]]
    _task: asyncio.Task[int] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def committed(
        self, group: str, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        found = await asyncio.to_thread(self._kafka.committed, group, list(partitions))
        return {tp: found.get(tp) or 0 for tp in partitions}

    async def seed(self, record: RebuildRecord) -> None:
        """Set the catch-up group's offsets to the watermark, still in the topics' history."""
        if lost := await asyncio.to_thread(below_log_start, self._kafka, record.watermark):
            raise OperationRefused(
                f"the catch-up of {record.alias} would start below the log start "
                f"({'; '.join(lost)}): those events were deleted by retention while the backfill "
                "ran, so this rebuild cannot be completed. Run `searchsync rebuild --abandon`, "
                "then `searchsync rebuild` again (a shorter backfill, or a longer topic "
                "retention.ms, keeps the watermark in the log)"
            )
        failed = await asyncio.to_thread(
            self._kafka.alter_committed, record.catchup_group, dict(record.watermark)
        )
        if failed:
            raise OperationRefused(f"setting {record.catchup_group}'s offsets: {failed}")

    async def catch_up(self, record: RebuildRecord) -> dict[TopicPartition, int]:
        """Wait until the catch-up group reached the topics' ends as of now; those ends."""
        topics = sorted({t for t, _ in record.watermark})
        target = await asyncio.to_thread(high_watermarks, self._kafka, topics)
        await self.wait_until(record, record.catchup_group, target)
        return target

    async def wait_until(self, record: RebuildRecord, group: str, target: Watermark) -> None:
        """Return once `group` (the catch-up group, or the live group) committed at least `target`
        on every partition, the lag shown as ``reindex_incremental_lag``; `OperationRefused` at
        its timeout, or when the catch-up consumer stopped by itself."""
        r = self._settings.rebuild
        live = group == self._settings.kafka.group_id
        timeout_s = r.live_wait_timeout_s if live else r.catchup_timeout_s
        what = f"{'live' if live else 'catch-up'} group {group}"
        deadline = time.monotonic() + timeout_s
        partitions = sorted(target)
        while True:
            done = await self.committed(group, partitions)
            lag = sum(max(0, target[tp] - done[tp]) for tp in partitions)
            self._metrics.set("reindex_incremental_lag", record.alias, lag)
            if lag == 0:
                return
            if (why := self.failure()) is not None:
                raise OperationRefused(f"{what}: {why}")
            if time.monotonic() >= deadline:
                raise OperationRefused(
                    f"{what}: still {lag} events behind after {timeout_s:.0f}s; the progress is "
                    "saved: run the rebuild again with --resume"
                )
            await asyncio.sleep(r.poll_interval_s)

    async def start(self, record: RebuildRecord) -> None:
        """Start the record's catch-up group, unless it runs."""
        if self._task is None:
            topics = sorted({t for t, _ in record.watermark})
            self._stop.clear()
            self._task = asyncio.create_task(self._run(record, topics, self._stop))
            self._progress.step("catch-up", f"group {record.catchup_group} started")

    def failure(self) -> str | None:
        task = self._task
        if task is None or not task.done():
            return None
        if task.cancelled():
            return "the catch-up consumer was cancelled"
        if (exc := task.exception()) is not None:
            return f"the catch-up consumer failed: {exc}"
        return f"the catch-up consumer stopped with exit code {task.result()} (see its log)"

    async def stop(self) -> None:
        """Let the catch-up consumer drain, commit its finished prefix and leave the group."""
        task, self._task = self._task, None
        if task is not None:
            self._stop.set()
            await task

    async def sweep(self, projector: Projector, record: RebuildRecord) -> str:
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
            if not left or self.failure() is not None or time.monotonic() >= deadline:
                return left
            await self._sleep(r.poll_interval_s)


async def live_group_passed(
    kafka: KafkaAdmin,
    settings: Settings,
    watermark: Watermark,
    sleep: Callable[[float], Awaitable[None]],
) -> str | None:
    """Wait until the live group committed at least `watermark` on every partition (a note for
    the summary), or return at once when the group never committed and will start below it
    (``auto_offset_reset = earliest``, the log start at or below it, no member); None at
    ``load.live_wait_timeout_s``."""
    group, target = settings.kafka.group_id, dict(watermark)
    deadline = time.monotonic() + settings.load.live_wait_timeout_s
    while True:
        found = await asyncio.to_thread(kafka.committed, group, sorted(target))
        if all((found.get(tp) or 0) >= offset for tp, offset in target.items()):
            return f"live group {group} is past the watermark"
        if (
            all(v is None for v in found.values())
            and settings.kafka.auto_offset_reset == "earliest"
            # and no member runs: a member's first commit is not far
            and not await asyncio.to_thread(kafka.active_members, group)
            and not await asyncio.to_thread(below_log_start, kafka, target)
        ):
            return (
                f"live group {group} has not committed yet: it starts at the log start, "
                "below the watermark, and applies every change after it"
            )
        if time.monotonic() >= deadline:
            return None
        await sleep(settings.load.poll_interval_s)
