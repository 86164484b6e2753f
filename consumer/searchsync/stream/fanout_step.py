"""The consumer's part of the fan-out (docs/design.md, "Fan-out"; invariant 16): an event of a type
a projector's lookup names records one ``search_fanout`` job per dependent type and lookup before
its work may finish. A type without a projector of its own finishes here."""

from __future__ import annotations

from collections.abc import Sequence

from searchsync.mysql.fanout import FanoutStore, FanoutTarget
from searchsync.projection import ProjectorRegistry
from searchsync.projection.references import dependents
from searchsync.search.sink import OutcomeKind
from searchsync.stream.coalesce import Work
from searchsync.stream.verdict import Verdict, read_failed


async def record_fanout(
    registry: ProjectorRegistry,
    store: FanoutStore | None,
    aggregate_type: str,
    works: Sequence[Work],
) -> list[Verdict] | None:
    """Record the fan-out jobs of `works`: their verdicts when they end here (fan-out only, or the
    record failed), None when they go on to their projector."""
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
