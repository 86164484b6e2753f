"""Compare one bucket's rows with its documents (pure). Per document, in precedence order:
MISSING, STALE, DELETED_FLAG, SCHEMA_STALE, CONTENT_DRIFT (where content is checked); a live
document without a row is an ORPHAN. MISSING and ORPHAN only when the bucket was read completely
(`complete`; invariant 13). A soft-deleted row without a document is MISSING unless it is
`TruthEntry.purged` (deleted before the tombstone window: its tombstone may be purged; docs/
design.md, "Tombstones and their purge")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from searchsync.errors import PoisonMessage
from searchsync.mysql.truth_buckets import TruthEntry
from searchsync.ops.repair.model import Finding, FindingKind, IndexEntry
from searchsync.projection import Projector, content_hash, projected_fields


def compare(
    projector: Projector,
    rows: Mapping[str, TruthEntry],
    docs: Mapping[str, IndexEntry],
    *,
    content: bool,
    complete: bool,
) -> list[Finding]:
    """The findings of one bucket, sorted by id then kind."""
    kind_type = projector.aggregate_type
    schema = projector.schema_version
    found: list[Finding] = []
    for doc_id, row in rows.items():
        doc = docs.get(doc_id)
        if doc is None:
            if complete and not row.purged:
                found.append(Finding(FindingKind.MISSING, kind_type, doc_id, row.revision, None))
        elif (
            content
            or doc.version != row.revision
            or doc.is_deleted != row.deleted
            or doc.schema_version is None
            or doc.schema_version < schema
        ):  # the common case (same revision, flag and schema, no content check) finds nothing
            found.extend(_pair(projector, row, doc, content=content))
    if complete:
        for doc_id, doc in docs.items():
            if doc_id not in rows and not doc.is_deleted:
                found.append(Finding(FindingKind.ORPHAN, kind_type, doc_id, None, doc.version))
    found.sort(key=lambda f: f.id)  # stable: the kinds of one id keep their order
    return found


def _pair(
    projector: Projector, row: TruthEntry, doc: IndexEntry, *, content: bool
) -> list[Finding]:
    kind_type = projector.aggregate_type

    def finding(kind: FindingKind, detail: str) -> Finding:
        return Finding(kind, kind_type, row.id, row.revision, doc.version, detail)

    if doc.version < row.revision:
        return [finding(FindingKind.STALE, f"document {doc.version} < row {row.revision}")]
    if doc.version > row.revision:
        return []  # a revision regression: the consumer surfaces it; a REBUILD cannot help
    out: list[Finding] = []
    if doc.is_deleted != row.deleted:
        out.append(finding(FindingKind.DELETED_FLAG, f"is_deleted={doc.is_deleted}"))
    if doc.schema_version is None or doc.schema_version < projector.schema_version:
        out.append(finding(FindingKind.SCHEMA_STALE, f"schema {doc.schema_version}"))
    elif out:
        pass  # a flag mismatch is the more specific finding; the content differs with it
    elif content and doc.source is not None and row.row is not None:
        try:
            fresh = projector.project(row.row)
        except PoisonMessage:
            fresh = None  # the consumer dead-letters such a row; only the body is checked
        if fresh is None:
            if content_hash(doc.source) != doc.projection_hash:
                out.append(finding(FindingKind.CONTENT_DRIFT, "_source differs from its hash"))
        elif fresh.projection_hash != doc.projection_hash:
            out.append(finding(FindingKind.CONTENT_DRIFT, "hash differs from the row's"))
        elif projected_fields(doc.source) != fresh.projected:  # the same hash, another body
            out.append(finding(FindingKind.CONTENT_DRIFT, "_source differs from its hash"))
    return out


def still_holding(
    projector: Projector,
    candidates: Sequence[Finding],
    rows: Mapping[str, TruthEntry],
    docs: Mapping[str, IndexEntry],
) -> list[Finding]:
    """The `candidates` that still hold against `rows` and `docs` re-read after the settle delay:
    a missing or stale document only if still below the revision first seen (a row that keeps
    changing is in flight; a missing one not if its row is purged by now), an orphan only if its
    row is still gone, the others if they recur."""
    again = {(f.kind, f.id): f for f in compare(projector, rows, docs, content=True, complete=True)}
    kept: list[Finding] = []
    for f in candidates:
        row, doc = rows.get(f.id), docs.get(f.id)
        if f.kind in (FindingKind.MISSING, FindingKind.STALE):
            behind = doc is None or (f.row_revision is not None and doc.version < f.row_revision)
            if row is not None and behind and (doc is not None or not row.purged):
                kind = FindingKind.MISSING if doc is None else FindingKind.STALE
                version = None if doc is None else doc.version
                kept.append(Finding(kind, f.aggregate_type, f.id, row.revision, version, f.detail))
        elif f.kind is FindingKind.ORPHAN:
            if row is None and doc is not None and not doc.is_deleted:
                kept.append(Finding(f.kind, f.aggregate_type, f.id, None, doc.version))
        elif (f.kind, f.id) in again:
            kept.append(again[(f.kind, f.id)])
    return kept
