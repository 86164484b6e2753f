"""Compare one bucket's rows with its documents: the six kinds of drift (docs/design.md,
"Repair"). Pure: the same entries give the same findings.

Rules:
- a row without a document is MISSING, except a soft-deleted row (its tombstone may have been
  purged: not missing);
- a document below the row's revision is STALE (nothing else is checked then);
- at the same revision: ``is_deleted`` against ``deleted_at`` (DELETED_FLAG), the schema version
  against the projector's (SCHEMA_STALE), and, where content is checked, the stored hash against
  the row's projection and the stored projected fields against that projection's (CONTENT_DRIFT:
  the body no longer matches its hash; for a row the projector refuses, the body is hashed
  again instead; one finding per document: DELETED_FLAG, then SCHEMA_STALE, take precedence);
- a live document (``is_deleted: false``) without a row is an ORPHAN; a tombstone without a
  row is what a hard delete leaves;
- MISSING and ORPHAN only when the bucket was read completely (`complete`; invariant 13).
"""

from __future__ import annotations

from collections.abc import Mapping

from consumer.errors import PoisonMessage
from consumer.ops.repair.model import Finding, FindingKind, IndexEntry, TruthEntry
from consumer.projection import Projector, content_hash, projected_fields

__all__ = ["compare"]


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
            if complete and not row.deleted:
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
        elif projected_fields(doc.source) != fresh.projected:
            # the same hash, another body: equal to hashing the body again (both sides are
            # decoded JSON of canonical bytes), without canonicalizing it
            out.append(finding(FindingKind.CONTENT_DRIFT, "_source differs from its hash"))
    return out
