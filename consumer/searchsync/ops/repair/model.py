"""What the wheel reads from the index (`IndexEntry`, from the `SearchEngine`'s documents) and
what it finds."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from searchsync.search.port import StoredDocument


class FindingKind(enum.StrEnum):
    """The kinds of drift; the values name the report's columns."""

    MISSING = "missing"  # a row without a document
    STALE = "stale"  # the document's revision is below the row's
    ORPHAN = "orphan"  # a live document without a row
    CONTENT_DRIFT = "hash_mismatch"  # same revision, content differs from its hash or the row's
    SCHEMA_STALE = "schema_stale"  # projection_schema_version below the projector's
    DELETED_FLAG = "deleted_flag"  # is_deleted disagrees with deleted_at
    STRAY = "stray"  # a document of a row outside its key range (no or a wrong sync_hash)


@dataclass(slots=True)
class IndexEntry:
    """One document as the wheel reads it; `source` is the whole `_source` when content is
    checked (None otherwise); `sync_hash` the stored bucket key (None: none, or not a number)."""

    id: str
    version: int
    projection_hash: str | None
    schema_version: int | None
    is_deleted: bool
    source: dict[str, Any] | None = None
    sync_hash: int | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    kind: FindingKind
    aggregate_type: str
    id: str
    row_revision: int | None  # None: no row
    doc_version: int | None  # None: no document
    detail: str = field(default="", compare=False)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind.value}


def entry_of(doc: StoredDocument, *, content: bool) -> IndexEntry:
    """`doc` as the wheel reads it (its whole source kept only with `content`)."""
    return entry_of_source(doc.doc_id, doc.version, doc.source, content=content)


def entry_of_source(
    doc_id: str, version: int, source: dict[str, Any], *, content: bool
) -> IndexEntry:
    schema = source.get("projection_schema_version")
    hash_ = source.get("projection_hash")
    key = source.get("sync_hash")
    return IndexEntry(
        doc_id,
        version,
        hash_ if hash_.__class__ is str else None,
        schema if schema.__class__ is int else None,
        source.get("is_deleted") is True,
        source if content else None,
        key if key.__class__ is int else None,
    )
