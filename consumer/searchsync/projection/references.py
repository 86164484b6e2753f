"""Which aggregate types reference which, through ``Lookup(aggregate_type=...)`` (docs/design.md,
"Fan-out"). A referenced type may have no projector: its events only fan out to dependents."""

from __future__ import annotations

from searchsync.projection._registry import Projector, ProjectorRegistry
from searchsync.projection._relations import Lookup


def dependents(
    registry: ProjectorRegistry, aggregate_type: str
) -> tuple[tuple[Projector, Lookup], ...]:
    """Every (projector, lookup) whose lookup reads rows of `aggregate_type`, sorted by the
    projector's type and the lookup's name."""
    return tuple(
        (p, lookup)
        for p in map(registry.get, registry.types())
        for lookup in sorted(p.lookups, key=lambda lk: lk.name)
        if lookup.aggregate_type == aggregate_type
    )


def referenced_types(registry: ProjectorRegistry) -> tuple[str, ...]:
    """The aggregate types some lookup references, sorted."""
    return tuple(sorted({referenced for referenced, _, _ in routes(registry)}))


def routes(registry: ProjectorRegistry) -> tuple[tuple[str, str, str], ...]:
    """Every (referenced type, dependent type, lookup name) the registry's lookups declare."""
    return tuple(
        (lk.aggregate_type, t, lk.name)
        for t in registry.types()
        for lk in registry.get(t).lookups
        if lk.aggregate_type is not None
    )


def event_types(registry: ProjectorRegistry) -> tuple[str, ...]:
    """The types whose events the consumer takes: the projectors' and the referenced ones."""
    return tuple(sorted({*registry.types(), *referenced_types(registry)}))


def business_tables(registry: ProjectorRegistry) -> tuple[str, ...]:
    """Every table the projectors read (roots, children and lookups), sorted."""
    found: set[str] = set()
    for p in map(registry.get, registry.types()):
        found.update((p.table, *(c.table for c in p.children), *(lk.table for lk in p.lookups)))
    return tuple(sorted(found))
