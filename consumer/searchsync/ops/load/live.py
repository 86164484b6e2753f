"""The end of a load's part: has the live group passed the part's watermark?"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from searchsync.config import Settings
from searchsync.kafka.admin import KafkaAdmin
from searchsync.ops.rebuild.records import Watermark


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
        if all(v is None for v in found.values()) and await _will_start_below(
            kafka, settings, target
        ):
            return (
                f"live group {group} has not committed yet: it starts at the log start, "
                "below the watermark, and applies every change after it"
            )
        if time.monotonic() >= deadline:
            return None
        await sleep(settings.load.poll_interval_s)


async def _will_start_below(
    kafka: KafkaAdmin, settings: Settings, target: dict[tuple[str, int], int]
) -> bool:
    """True when a new live group starts at the log start and that is at or below `target` on
    every partition (and no member runs: a member's first commit is not far)."""
    if settings.kafka.auto_offset_reset != "earliest":
        return False
    if await asyncio.to_thread(kafka.active_members, settings.kafka.group_id):
        return False
    for topic in sorted({t for t, _ in target}):
        marks = await asyncio.to_thread(kafka.watermarks, topic)
        if any(target.get((topic, p), m.low) < m.low for p, m in marks.items()):
            return False
    return True
