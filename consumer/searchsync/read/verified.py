"""`verified_search`: a search on the read alias whose hits are proven against their MySQL rows
(from the primary by default): FRESH, STALE (optionally replaced by the row's projection) or GONE
(dropped), counted per `query_type` (docs/read-side.md)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from searchsync.errors import PoisonMessage
from searchsync.mysql.truth import Truth
from searchsync.naming import read_alias_name
from searchsync.observability.read_metrics import ReadMetrics
from searchsync.projection import Projector
from searchsync.search.reads import SearchReader, StoredDocument


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


async def verified_search(
    reader: SearchReader,
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
    kept: list[VerifiedHit] = []
    gone = 0
    for hit in hits:
        checked = _check(hit, rows.get(hit.doc_id), projector, replace_stale)
        if checked is None:
            gone += 1
        else:
            kept.append(checked)
    stale = sum(h.freshness is Freshness.STALE for h in kept)
    if metrics is not None:
        metrics.drift(query_type, stale=stale, gone=gone)
    return VerifiedResult(
        hits=tuple(kept),
        fresh=len(kept) - stale,
        stale=stale,
        gone=gone,
        replaced=sum(h.replaced for h in kept),
    )


def _check(
    hit: StoredDocument, row: Mapping[str, Any] | None, projector: Projector, replace: bool
) -> VerifiedHit | None:
    """The hit as verified against `row`; None when it is gone."""
    if row is None:
        return None
    revision = int(row["revision"])
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
