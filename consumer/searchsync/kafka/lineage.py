"""Source lineage (invariant 14): the history a group's committed offsets count belongs to one
topic. A topic deleted and re-created has a new topic id (Kafka drops the group's offsets with the
old one), and a cluster restored from a backup can hold a committed offset above the log end. Both
mean the group cannot tell what it has not read: the partition is blocked like a history gap
(`kafka.gaps`), until `offsets reset --accept-gap` adopts the topic as it is now.

The group's topic ids live in MySQL (``search_topic_lineage``), not in the commit metadata: the
metadata goes with the offsets when the topic is deleted, the table does not."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from searchsync.mysql.lineage import TopicLineage

log = logging.getLogger(__name__)

REASON: Final = "source lineage mismatch"


@dataclass(frozen=True, slots=True)
class LineageMismatch:
    """`topic`/`partition` is not the history the group's offsets count: re-created (`recorded_id`
    differs from `current_id`), or `committed` is above `log_end`."""

    topic: str
    partition: int
    committed: int | None
    log_end: int
    recorded_id: str | None = None
    current_id: str | None = None

    @property
    def missing(self) -> None:
        """How many records were lost is unknown."""
        return None

    def describe(self) -> str:
        where = f"{self.topic}[{self.partition}] blocked: {REASON}"
        if self.recorded_id is not None and self.recorded_id != self.current_id:  # re-created
            return (
                f"{where}: the topic was re-created since the group last read it (topic id "
                f"{self.recorded_id} then, {self.current_id} now); what the group had not read "
                "of the old topic is lost"
            )
        return (
            f"{where}: committed offset {self.committed} is above the log end {self.log_end} "
            "(the topic was re-created or the cluster restored from a backup)"
        )


def mismatch(
    topic: str,
    partition: int,
    committed: int | None,
    high: int,
    recorded_id: str | None,
    current_id: str | None,
) -> LineageMismatch | None:
    """The lineage mismatch of one partition, or None when its offsets count its history."""
    recreated = recorded_id is not None and current_id is not None and recorded_id != current_id
    if recreated or (committed is not None and committed > high):
        return LineageMismatch(topic, partition, committed, high, recorded_id, current_id)
    return None


@dataclass(frozen=True, slots=True)
class LineageCheck:
    """The group's recorded topic ids against the cluster's, asked from the consumer thread: the
    store's coroutines run on `loop`. A topic the group has no record of is adopted as it is."""

    store: TopicLineage
    group: str
    topic_ids: Callable[[Sequence[str]], dict[str, str]]
    loop: asyncio.AbstractEventLoop
    timeout_s: float = field(kw_only=True)

    def ids(self, topics: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
        """topic -> (recorded id, current id); raises when either side cannot be read."""
        current = self.topic_ids(sorted(set(topics)))
        recorded = self._run(self.store.recorded(self.group))
        new = {t: i for t, i in current.items() if t not in recorded}
        if new:
            self._run(self.store.adopt(self.group, new))
            log.info("topic lineage recorded", extra={"group": self.group, "topic_ids": new})
        return {t: (recorded.get(t, current.get(t)), current.get(t)) for t in topics}

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=self.timeout_s)


def lineage_changes(
    recorded: Mapping[str, str], current: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """topic -> (recorded id, current id) for every topic whose id changed."""
    return {t: (recorded[t], i) for t, i in current.items() if t in recorded and recorded[t] != i}


async def watch_lineage(
    check: LineageCheck,
    topics: Callable[[], Sequence[str]],
    *,
    interval_s: float,
    stop: asyncio.Event,
) -> str | None:
    """Compare the ids of `topics()` with the group's records every `interval_s` while a member
    runs: a topic re-created under it keeps being fetched at the old position (librdkafka does
    not notice), so the change is said and the member must stop; its next assignment blocks the
    partitions. The description of the change, or None once `stop` is set."""
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
        if stop.is_set():
            return None
        try:
            ids = await asyncio.to_thread(lambda: check.ids(topics()))
        except Exception as exc:  # the assignment-time check still holds
            log.warning("topic lineage unreadable", extra={"error": str(exc)})
            continue
        changed = [
            f"topic {t} was re-created while this member read it (topic id {r} then, {c} now)"
            for t, (r, c) in sorted(ids.items())
            if None not in (r, c) and r != c
        ]
        if changed:
            return "; ".join(changed)
