"""The catch-up: a consumer group of its own replays the type's topics from the watermark into the
new physical index; and the topics' offsets it starts from and is measured against."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

from searchsync.config import Settings
from searchsync.errors import OperationRefused
from searchsync.kafka.admin import KafkaAdmin
from searchsync.ops.rebuild.state import Watermark
from searchsync.types import TopicPartition


class CatchUp(Protocol):
    """A running catch-up group."""

    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Drain in-flight work, commit the finished prefix, leave the group."""

    def failure(self) -> str | None:
        """Why the group stopped by itself (None while it runs, or after `stop`)."""


CatchUpRunner = Callable[..., Coroutine[Any, Any, int]]
"""The shape of `searchsync.runtime.run_consumer` the catch-up calls."""


def catchup_settings(settings: Settings, group: str, topics: Sequence[str]) -> Settings:
    """The live settings with the catch-up group's id and subscription (the type's topics)."""
    kafka = dataclasses.replace(
        settings.kafka,
        group_id=group,
        topics=tuple(topics),
        topic_regex=None,
        auto_offset_reset="earliest",  # a partition created after the watermark: all of it
    )
    observability = dataclasses.replace(settings.observability, metrics_port=0)
    return dataclasses.replace(settings, kafka=kafka, observability=observability)


class ConsumerCatchUp:
    """`CatchUp` as the normal pipeline (`runner`) with the catch-up group's settings, writing
    to the new physical index (`write_targets`)."""

    def __init__(
        self, settings: Settings, *, write_targets: Mapping[str, str], runner: CatchUpRunner
    ) -> None:
        self._settings = settings
        self._targets = dict(write_targets)
        self._runner = runner
        self._stop = asyncio.Event()
        self._task: asyncio.Task[int] | None = None

    async def start(self) -> None:
        self._stop.clear()
        run = self._runner(self._settings, stop=self._stop, write_targets=self._targets)
        self._task = asyncio.create_task(run)

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            self._stop.set()
            await task

    def failure(self) -> str | None:
        task = self._task
        if task is None or not task.done():
            return None
        if task.cancelled():
            return "the catch-up consumer was cancelled"
        exc = task.exception()
        if exc is not None:
            return f"the catch-up consumer failed: {exc}"
        return f"the catch-up consumer stopped with exit code {task.result()} (see its log)"


def check_history(admin: KafkaAdmin, watermark: Watermark, alias: str) -> None:
    """Raise `OperationRefused` when a partition's watermark lies below its log start now: events
    the catch-up must replay were deleted (retention) before it started."""
    lost: list[str] = []
    for topic in sorted({t for t, _ in watermark}):
        for partition, marks in admin.watermarks(topic).items():
            offset = watermark.get((topic, partition))
            if offset is not None and offset < marks.low:
                lost.append(f"{topic}[{partition}] watermark {offset} < log start {marks.low}")
    if lost:
        raise OperationRefused(
            f"the catch-up of {alias} would start below the log start ({'; '.join(lost)}): those "
            "events were deleted by retention while the backfill ran, so this rebuild cannot be "
            "completed. Run `searchsync rebuild --abandon`, then `searchsync rebuild` again (a "
            "shorter backfill, or a longer topic retention.ms, keeps the watermark in the log)"
        )


def high_watermarks(admin: KafkaAdmin, topics: Sequence[str]) -> dict[TopicPartition, int]:
    """The end offset of every partition of `topics`, now."""
    return {
        (topic, partition): marks.high
        for topic in topics
        for partition, marks in admin.watermarks(topic).items()
    }
