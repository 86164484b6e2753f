"""After a swap that changed the schema version: have the old-shape documents an old consumer wrote
into the new index before its fence went up rewritten (docs/design.md, "Schema fence").

Once the fence has settled (`settle_s`), every document whose ``projection_schema_version`` is not
the new one gets one REBUILD outbox event at its stored version; the catch-up group's REBUILD
rewrite (invariant 12) replaces it. The rebuild never writes such a document itself (invariant 9).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from searchsync.config import Settings
from searchsync.mysql.outbox import Outbox
from searchsync.ops.rebuild.reader import IndexReader

__all__ = [
    "SweepResult",
    "settle_s",
    "sweep_other_schema",
    "wait_rewritten",
]

SETTLE_MARGIN_S = 1.0
"""Beyond two fence intervals: a batch that passed the gate just before the fence went up."""


@dataclass(frozen=True, slots=True)
class SweepResult:
    found: int
    ids: tuple[str, ...]


def settle_s(settings: Settings) -> float:
    """How long after a swap every old consumer has seen its fence: two check intervals (the
    check that sees the swap comes at most one interval later) plus a margin."""
    return 2 * settings.pipeline.fence_check_interval_s + SETTLE_MARGIN_S


async def sweep_other_schema(
    *,
    reader: IndexReader,
    outbox: Outbox,
    aggregate_type: str,
    index: str,
    schema_version: int,
) -> SweepResult:
    """Append a REBUILD (at the stored version) for every document of `index` whose
    ``projection_schema_version`` is not `schema_version`; the ids found."""
    await reader.refresh(index)
    stale = await reader.other_schema(index, schema_version)
    for doc_id, version in stale:
        await outbox.append_rebuild(aggregate_type, doc_id, version)
    return SweepResult(len(stale), tuple(doc_id for doc_id, _ in stale))


async def wait_rewritten(
    *,
    reader: IndexReader,
    index: str,
    schema_version: int,
    ids: tuple[str, ...],
    timeout_s: float,
    poll_s: float,
    sleep: Callable[[float], Awaitable[None]],
    failure: Callable[[], str | None],
) -> tuple[str, ...]:
    """Wait until none of `ids` is of another schema version in `index` (their REBUILDs reach
    the topic through Debezium, then the catch-up group); the ids still stale at the deadline."""
    deadline = time.monotonic() + timeout_s
    wanted = set(ids)
    while True:
        await reader.refresh(index)
        left = wanted & {i for i, _ in await reader.other_schema(index, schema_version)}
        if not left:
            return ()
        why = failure()
        if why is not None or time.monotonic() >= deadline:
            return tuple(sorted(left))
        await sleep(poll_s)
