"""Compare one bucket's rows with its documents: the six kinds of drift (docs/design.md,
"Repair"). Pure: the same entries give the same findings.

Rules:
- a row without a document is MISSING, except a soft-deleted row (its tombstone may have been
  purged: not missing);
- a document below the row's revision is STALE (nothing else is checked then);
- at the same revision: ``is_deleted`` against ``deleted_at`` (DELETED_FLAG), the schema version
  against the projector's (SCHEMA_STALE), and, where content is checked, the stored body against
  its own ``projection_hash`` and that hash against the row's projection (CONTENT_DRIFT; one
  finding per document: DELETED_FLAG, then SCHEMA_STALE, take precedence);
- a live document (``is_deleted: false``) without a row is an ORPHAN; a tombstone without a
  row is what a hard delete leaves;
- MISSING and ORPHAN only when the bucket was read completely (`complete`; invariant 13).
"""

from __future__ import annotations

from collections.abc import Mapping

from consumer.errors import PoisonMessage
from consumer.ops.repair.model import Finding, FindingKind, IndexEntry, TruthEntry
from consumer.projection import Projector, content_hash

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
        if content_hash(doc.source) != doc.projection_hash:
            out.append(finding(FindingKind.CONTENT_DRIFT, "_source differs from its hash"))
        else:
            try:
                fresh = projector.project(row.row).projection_hash
            except PoisonMessage:
                fresh = None  # the consumer dead-letters such a row; not a drift finding
            if fresh is not None and fresh != doc.projection_hash:
                out.append(finding(FindingKind.CONTENT_DRIFT, "hash differs from the row's"))
    return out
