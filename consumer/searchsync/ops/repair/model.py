"""What the wheel reads from the index (`IndexEntry`, from the `SearchEngine`'s documents), what
it finds, and what a rotation reports: per bucket, per stray sweep, and in all."""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import KW_ONLY, asdict, dataclass, field
from typing import Any

from searchsync.ops.repair.generations import Choice, Epoch
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
    source = doc.source
    schema = source.get("projection_schema_version")
    hash_ = source.get("projection_hash")
    key = source.get("sync_hash")
    return IndexEntry(
        doc.doc_id,
        doc.version,
        hash_ if hash_.__class__ is str else None,
        schema if schema.__class__ is int else None,
        source.get("is_deleted") is True,
        source if content else None,
        key if key.__class__ is int else None,
    )


@dataclass(slots=True)
class _Part:
    """What a bucket and a stray sweep both report: `candidates` re-read after the settle delay,
    the confirmed `findings`, the REBUILDs `appended`; `stopped`: the live lag stayed too high
    while healing."""

    aggregate_type: str
    _: KW_ONLY
    candidates: int = 0
    findings: list[Finding] = field(default_factory=list)
    appended: int = 0
    seconds: float = 0.0
    interrupted: str | None = None
    stopped: str | None = None


@dataclass(slots=True)
class BucketReport(_Part):
    bucket: int
    generation: int
    content_checked: bool
    rows: int = 0
    docs: int = 0


@dataclass(slots=True)
class StrayReport(_Part):
    """One type's stray sweep: `outside` documents outside the key space and `misplaced` ones
    were read; `ahead` documents above their row's revision are left alone. `truncated`: the read
    stopped at its ceiling."""

    outside: int = 0
    misplaced: int = 0
    ahead: int = 0
    truncated: bool = False


@dataclass(slots=True)
class RotationReport:
    epochs: dict[str, Epoch] = field(default_factory=dict)
    new_epochs: list[str] = field(default_factory=list)
    buckets: list[BucketReport] = field(default_factory=list)
    choices: list[tuple[str, Choice]] = field(default_factory=list)
    seconds: float = 0.0
    oldest_age_s: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None  # why the rotation ended early (the live lag stayed too high)
    strays: list[StrayReport] = field(default_factory=list)
    content_share: float = 0.0  # the share of buckets whose content this rotation checks

    @property
    def parts(self) -> list[BucketReport | StrayReport]:
        return [*self.buckets, *self.strays]

    def findings(self) -> list[Finding]:
        return [f for part in self.parts for f in part.findings]

    def counts(self) -> dict[str, int]:
        c: Counter[str] = Counter({k.value: 0 for k in FindingKind})
        c.update(f.kind.value for f in self.findings())
        return dict(c)

    @property
    def interrupted(self) -> int:
        return sum(1 for b in self.buckets if b.interrupted is not None)

    @property
    def complete(self) -> bool:
        """Every bucket and stray sweep read completely, and the rotation not stopped."""
        return all(p.interrupted is None for p in self.parts) and self.stopped is None
