"""The consumer's part of the fan-out: record a job for every event of a referenced aggregate
(docs/design.md, "Fan-out"; invariant 16).

An event of a type some projector's lookup names (``Lookup(aggregate_type=...)``, an author read
by articles) records one fan-out job per dependent type and lookup, in ``search_fanout``, before
the event's work may finish: its offset is committed only once the job is durable. The fan-out
worker (`searchsync.ops.fanout`) then finds the dependents in MySQL and appends their REBUILD
events. A type with no projector of its own finishes here; one with a projector goes on to be
projected and written as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchsync.mysql.fanout import FanoutStore, FanoutTarget
from searchsync.projection import ProjectorRegistry
from searchsync.projection.references import dependents
from searchsync.search.sink import OutcomeKind
from searchsync.stream.coalesce import Work
from searchsync.stream.verdict import Verdict, read_failed

__all__ = ["record_fanout"]


async def record_fanout(
    registry: ProjectorRegistry,
    store: FanoutStore | None,
    aggregate_type: str,
    works: Sequence[Work],
) -> list[Verdict] | None:
    """Record the fan-out jobs of `works` (all of `aggregate_type`).

    The verdicts of the works when they end here (the type only fans out, or the record failed:
    then each is retried as its error says); None when they go on to their own projector."""
    found = dependents(registry, aggregate_type)
    if not found or store is None:
        return None
    targets = [
        FanoutTarget(
            aggregate_type, w.key.aggregate_id, p.aggregate_type, lookup.name, w.max_revision
        )
        for w in works
        for p, lookup in found
    ]
    try:
        await store.record(targets)
    except Exception as exc:  # not durable: nothing of these works may finish
        return [read_failed(w, exc, aggregate_type) for w in works]
    if aggregate_type in registry.types():
        return None
    return [Verdict(w, OutcomeKind.APPLIED) for w in works]
