"""The read side (docs/read-side.md). Read-your-writes: wait, bounded, until a revision or a higher
one is `Until.INDEXED` (real-time GET on the write alias) or `Until.SEARCHABLE` (on the read alias
``<alias>_live``, never a tombstone; for a delete, the tombstone on the write alias); no refresh is
forced. `verified_search`: read-alias hits checked against their MySQL rows: FRESH, STALE, GONE."""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from searchsync.config import Settings
from searchsync.errors import PoisonMessage
from searchsync.mysql.truth import Truth
from searchsync.naming import read_alias_name
from searchsync.projection import Projector
from searchsync.runtime import Runtime
from searchsync.search.port import SearchEngine, StoredDocument


class Until(enum.Enum):
    INDEXED = "indexed"
    SEARCHABLE = "searchable"


@dataclass(frozen=True, slots=True)
class Backoff:
    """The pause between two polls: `first_s`, times `factor` each poll, at most `max_s`."""

    first_s: float = 0.02
    factor: float = 2.0
    max_s: float = 0.5

    def __post_init__(self) -> None:
        if self.first_s <= 0 or self.factor < 1 or self.max_s < self.first_s:
            raise ValueError("want 0 < first_s <= max_s and factor >= 1")


@dataclass(frozen=True, slots=True)
class WaitResult:
    """How a wait ended. `seen` is the last revision observed (None: no document), `deleted`
    whether that document is a tombstone."""

    reached: bool
    until: Until
    alias: str
    doc_id: str
    revision: int
    seen: int | None
    deleted: bool | None
    waited_s: float
    polls: int

    @property
    def message(self) -> str:
        what = f"{self.doc_id} revision {self.revision} {self.until.value} in {self.alias}"
        tombstone = " (a tombstone)" if self.deleted else ""
        seen = "no document" if self.seen is None else f"revision {self.seen}{tombstone}"
        if self.reached:
            return f"{what}: reached after {self.waited_s:.3f}s, saw {seen}"
        return f"{what}: timed out after {self.waited_s:.3f}s ({self.polls} polls), saw {seen}"

    def as_json(self) -> dict[str, Any]:
        return {
            "reached": self.reached,
            "until": self.until.value,
            "alias": self.alias,
            "id": self.doc_id,
            "revision": self.revision,
            "seen_revision": self.seen,
            "seen_deleted": self.deleted,
            "waited_s": round(self.waited_s, 6),
            "polls": self.polls,
            "message": self.message,
        }


Observed = tuple[bool, int | None, bool | None]  # reached, revision seen, is it a tombstone


async def wait_for_revision(
    reader: SearchEngine,
    alias: str,
    doc_id: str,
    revision: int,
    *,
    until: Until = Until.INDEXED,
    timeout_s: float = 10.0,
    backoff: Backoff = Backoff(),
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> WaitResult:
    """Poll until `doc_id` (through the write alias `alias`) reached `revision`, or `timeout_s`
    passed (then `WaitResult.reached` is False; nothing is raised for a timeout)."""
    if revision < 1 or timeout_s < 0:
        raise ValueError("want revision >= 1 and timeout_s >= 0")
    probe = _indexed if until is Until.INDEXED else _searchable
    start = clock()
    pause, polls = backoff.first_s, 0
    while True:
        reached, seen, deleted = await probe(reader, alias, doc_id, revision)
        polls += 1
        waited = clock() - start
        if reached or waited >= timeout_s:
            return WaitResult(reached, until, alias, doc_id, revision, seen, deleted, waited, polls)
        await sleep(min(pause, timeout_s - waited))
        pause = min(pause * backoff.factor, backoff.max_s)


def wait_for_revision_sync(
    settings: Settings, aggregate_type: str, doc_id: str, revision: int, **options: Any
) -> WaitResult:
    """`wait_for_revision` (with its keyword `options`) on the alias of `aggregate_type` on a
    runtime of its own, for an application without an event loop (not from a running one)."""

    async def go() -> WaitResult:
        async with Runtime(settings) as runtime:
            reader, alias = runtime.search().aliased, settings.alias(aggregate_type)
            return await wait_for_revision(reader, alias, doc_id, revision, **options)

    return asyncio.run(go())


async def _indexed(reader: SearchEngine, alias: str, doc_id: str, revision: int) -> Observed:
    version = (await reader.get_versions(alias, [doc_id])).get(doc_id)
    return version is not None and version >= revision, version, None


async def _searchable(reader: SearchEngine, alias: str, doc_id: str, revision: int) -> Observed:
    only = {"ids": {"values": [doc_id]}}
    live = next(iter(await reader.search(read_alias_name(alias), only, size=1)), None)
    if live is not None:  # what readers see; a live document below the revision is not it yet
        return live.version >= revision, live.version, False
    hit = next(iter(await reader.search(alias, only, size=1)), None)
    if hit is None:
        return False, None, None
    deleted = hit.source.get("is_deleted") is True
    return deleted and hit.version >= revision, hit.version, deleted


class Freshness(enum.Enum):
    FRESH = "fresh"
    STALE = "stale"
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class VerifiedHit:
    """One hit kept: its `source` is the indexed document's, or the current row's projection
    when `replaced`."""

    doc_id: str
    freshness: Freshness
    indexed_revision: int
    row_revision: int
    source: dict[str, Any]
    replaced: bool = False


@dataclass(frozen=True, slots=True)
class VerifiedResult:
    hits: tuple[VerifiedHit, ...]  # in the search's order, gone hits dropped
    fresh: int
    stale: int
    gone: int
    replaced: int


class ReadMetrics:
    """The hits verified searches found stale (the row is newer) or gone (deleted or missing), per
    query type; on a private registry unless the application passes its own (for its /metrics)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._drift = Counter(
            "searchsync_verified_search_drift_hits",
            "Hits of a verified search whose row is newer (stale) or deleted or missing (gone)",
            ["query_type", "state"],
            registry=self.registry,
        )

    def drift(self, query_type: str, *, stale: int, gone: int) -> None:
        for state, n in (("stale", stale), ("gone", gone)):
            if n:
                self._drift.labels(query_type, state).inc(n)


async def verified_search(
    reader: SearchEngine,
    truth: Truth,
    projector: Projector,
    *,
    alias: str,
    query: Mapping[str, Any],
    query_type: str,
    size: int = 10,
    replace_stale: bool = False,
    primary: bool = True,
    metrics: ReadMetrics | None = None,
) -> VerifiedResult:
    """Run `query` on the read alias of the write alias `alias` (the type of `projector`) and
    check its first `size` hits against their rows."""
    hits = await reader.search(read_alias_name(alias), query, size=size)
    rows = await truth.rows_by_id(projector, [h.doc_id for h in hits], primary=primary)
    checked = [_check(hit, rows.get(hit.doc_id), projector, replace_stale) for hit in hits]
    kept = [h for h in checked if h is not None]
    gone = len(hits) - len(kept)
    stale = sum(h.freshness is Freshness.STALE for h in kept)
    if metrics is not None:
        metrics.drift(query_type, stale=stale, gone=gone)
    replaced = sum(h.replaced for h in kept)
    fresh = len(kept) - stale
    return VerifiedResult(tuple(kept), fresh=fresh, stale=stale, gone=gone, replaced=replaced)


def _check(
    hit: StoredDocument, row: Mapping[str, Any] | None, projector: Projector, replace: bool
) -> VerifiedHit | None:
    """The hit as verified against `row`; None when it is gone."""
    if row is None:
        return None
    revision = int(row[projector.revision_column])
    if revision == hit.version:  # the document is this row's projection
        return VerifiedHit(hit.doc_id, Freshness.FRESH, hit.version, revision, hit.source)
    try:
        current = projector.project(row)
    except PoisonMessage:  # a row the consumer cannot project either: keep what is indexed
        return VerifiedHit(hit.doc_id, Freshness.STALE, hit.version, revision, hit.source)
    if current.is_deleted:
        return None
    source = dict(current.body) if replace else hit.source
    return VerifiedHit(hit.doc_id, Freshness.STALE, hit.version, revision, source, replace)
