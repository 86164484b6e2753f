"""Verification before the swap (docs/design.md, Rebuild). It passes when the new index holds
``rows`` (soft-deleted included) + ``tombstones`` documents within ``max_count_difference``; at
most ``max_sample_mismatches`` of ``sample_size`` random documents differ from their row's
projection read now, at ``_version == source_revision`` (a tombstone for an id without a row); and
at most ``max_query_diff_rate`` of the sample queries give other top-``top_k`` ids than before."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from searchsync.config import RebuildSettings
from searchsync.errors import PoisonMessage
from searchsync.mysql.truth import Truth
from searchsync.ops.rebuild.records import RebuildRecord
from searchsync.projection import Projector, Row
from searchsync.search.port import SearchEngine, StoredDocument


@dataclass(slots=True)
class VerifyReport:
    rows: int = 0
    docs: int = 0
    tombstones: int = 0
    failed_rows: int = 0
    sampled: int = 0
    mismatches: list[tuple[str, str]] = field(default_factory=list)
    queries: int = 0
    queries_differing: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def count_difference(self) -> int:
        """Documents in the new index minus the documents the truth calls for."""
        return self.docs - (self.rows + self.tombstones)

    @property
    def query_diff_rate(self) -> float:
        return len(self.queries_differing) / self.queries if self.queries else 0.0

    @property
    def ok(self) -> bool:
        return not self.reasons

    def summary(self) -> dict[str, object]:
        return {
            "ok": self.ok,
            "rows": self.rows,
            "docs": self.docs,
            "tombstones": self.tombstones,
            "count_difference": self.count_difference,
            "failed_rows": self.failed_rows,
            "sampled": self.sampled,
            "sample_mismatches": [{"id": i, "why": w} for i, w in self.mismatches[:20]],
            "queries": self.queries,
            "queries_differing": self.queries_differing[:20],
            "query_diff_rate": self.query_diff_rate,
            "reasons": list(self.reasons),
        }


async def verify(
    reader: SearchEngine,
    truth: Truth,
    limits: RebuildSettings,
    projector: Projector,
    record: RebuildRecord,
) -> VerifyReport:
    """Measure `record`'s new index against the truth and its old index (a new random sample on
    every call)."""
    old_index, new_index, failed_rows = record.source_index, record.target_index, record.rows_failed
    report = VerifyReport(rows=await truth.count(projector), failed_rows=failed_rows)
    await reader.refresh(new_index)
    report.docs = await reader.count(new_index)
    deleted = await reader.deleted_ids(new_index)
    with_rows = await truth.rows_by_id(projector, deleted, primary=True) if deleted else {}
    report.tombstones = len(deleted) - len(with_rows)
    if abs(report.count_difference) > limits.max_count_difference:
        report.reasons.append(
            f"count: the new index holds {report.docs} documents, the truth calls for "
            f"{report.rows + report.tombstones} ({report.rows} rows + {report.tombstones} "
            f"tombstones): difference {report.count_difference}, limit "
            f"{limits.max_count_difference} (rebuild.max_count_difference)"
        )
    if failed_rows > limits.max_failed_rows:
        report.reasons.append(
            f"backfill: {failed_rows} rows could not be indexed, limit {limits.max_failed_rows}"
            " (rebuild.max_failed_rows); see the failures above"
        )

    sample = await reader.sample(new_index, limits.sample_size, random.randrange(2**31))
    report.sampled = len(sample)
    report.mismatches = await _compare(truth, projector, sample)
    if len(report.mismatches) > limits.max_sample_mismatches:
        first = "; ".join(f"{i}: {w}" for i, w in report.mismatches[:3])
        report.reasons.append(
            f"sample: {len(report.mismatches)} of {report.sampled} documents differ from the "
            f"projection of their rows, limit {limits.max_sample_mismatches} "
            f"(rebuild.max_sample_mismatches); first: {first}"
        )

    texts = list(limits.queries) or _titles(sample, limits.query_field, limits.query_count)
    report.queries = len(texts)
    for text in texts:
        old = await reader.top_ids(old_index, limits.query_field, text, limits.top_k)
        new = await reader.top_ids(new_index, limits.query_field, text, limits.top_k)
        if set(old) != set(new):
            report.queries_differing.append(text)
    if report.query_diff_rate > limits.max_query_diff_rate:
        report.reasons.append(
            f"queries: {len(report.queries_differing)} of {report.queries} sample queries give "
            f"other top-{limits.top_k} ids in {new_index} than in {old_index} (rate "
            f"{report.query_diff_rate:.3f}, limit {limits.max_query_diff_rate}, "
            "rebuild.max_query_diff_rate)"
        )
    return report


async def _compare(
    truth: Truth, projector: Projector, sample: Sequence[StoredDocument]
) -> list[tuple[str, str]]:
    ids = [d.doc_id for d in sample]
    if not ids:
        return []
    rows = await truth.rows_by_id(projector, ids, primary=True)
    gone = [i for i in ids if i not in rows]
    floors = (
        await truth.revision_floors(projector.aggregate_type, gone, primary=True) if gone else {}
    )
    return [
        (d.doc_id, why)
        for d in sample
        if (why := _difference(projector, d, rows.get(d.doc_id), floors.get(d.doc_id)))
    ]


def _difference(
    projector: Projector, doc: StoredDocument, row: Row | None, floor: int | None
) -> str | None:
    if row is None:
        expected = projector.tombstone(doc.doc_id, doc.version)
        if floor is not None and doc.version < floor:
            return f"row gone at revision {floor}, index holds version {doc.version}"
    else:
        try:
            expected = projector.project(row)
        except PoisonMessage as exc:
            return f"the row cannot be projected: {exc.message}"
    if doc.version != expected.source_revision:
        return f"_version {doc.version}, row revision {expected.source_revision}"
    if not expected.matches(doc.source):
        return f"_source differs from the projection at revision {doc.version}"
    return None


def _titles(sample: Sequence[StoredDocument], field_name: str, count: int) -> list[str]:
    """The first `count` distinct non-blank `field_name` values of the sample's live documents."""
    live = [d.source.get(field_name) for d in sample if d.source.get("is_deleted") is False]
    return list(dict.fromkeys(v for v in live if isinstance(v, str) and v.strip()))[:count]
