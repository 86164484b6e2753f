"""What the wheel reads: the ports to each side, and their in-memory implementations.

- `TruthSide.bucket_page`: rows of one key range after `after`, at most `limit`: id, revision,
  deleted_at, and the projector's columns only when `content` is asked.
- `IndexSide.bucket_page`: documents of one ``sync_hash`` range after `after`: ``_id``,
  ``_version`` (the external version: ``source_revision``),
  ``projection_schema_version``, ``is_deleted``; ``projection_hash`` and the whole ``_source``
  only when `content` is asked.
- A page resumes after a `Position`, the (bucket key, id) of the last entry the side returned;
  each side pages in an order of its own, (key, id) where the key is indexed, id alone where it
  is not, and the caller only hands back what the side returned last.
- `by_ids` on both: the settle re-check of findings (always with content).

MySQL: `searchsync.ops.repair.mysql_side`; Elasticsearch: `searchsync.ops.repair.es_side`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from searchsync.mysql.truth import InMemoryTruth
from searchsync.ops.repair.buckets import key_hash
from searchsync.ops.repair.model import IndexEntry, TruthEntry
from searchsync.projection import Projector, Row

__all__ = [
    "InMemoryTruthSide",
    "IndexSide",
    "Position",
    "TruthSide",
    "entry_of_row",
]

Position = tuple[int, str]
"""Where a key-range page resumes: the bucket key and the id of the last entry returned."""


class TruthSide(Protocol):
    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after: Position | None,
        limit: int,
        *,
        content: bool,
    ) -> list[TruthEntry]: ...

    async def by_ids(self, projector: Projector, ids: Sequence[str]) -> dict[str, TruthEntry]: ...


class IndexSide(Protocol):
    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: Position | None, limit: int, *, content: bool
    ) -> list[IndexEntry]: ...

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]: ...


def entry_of_row(row: Row, *, content: bool) -> TruthEntry:
    return TruthEntry(
        id=str(row["id"]),
        revision=int(row["revision"]),
        deleted=row.get("deleted_at") is not None,
        row=row if content else None,
    )


def entry_of_source(
    doc_id: str, version: int, source: dict[str, Any], *, content: bool
) -> IndexEntry:
    schema = source.get("projection_schema_version")
    hash_ = source.get("projection_hash")
    return IndexEntry(
        doc_id,
        version,
        hash_ if hash_.__class__ is str else None,
        schema if schema.__class__ is int else None,
        source.get("is_deleted") is True,
        source if content else None,
    )


class InMemoryTruthSide:
    """`TruthSide` over an `InMemoryTruth` (the hash computed per row, as MySQL would)."""

    def __init__(self, truth: InMemoryTruth) -> None:
        self._truth = truth
        self.pages = 0

    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after: Position | None,
        limit: int,
        *,
        content: bool,
    ) -> list[TruthEntry]:
        self.pages += 1
        rows = self._truth.tables.get(projector.table, {})
        ids = sorted(
            i
            for i in rows
            if (after is None or i > after[1]) and lo <= key_hash(projector.aggregate_type, i) < hi
        )
        return [entry_of_row(rows[i], content=content) for i in ids[:limit]]

    async def by_ids(self, projector: Projector, ids: Sequence[str]) -> dict[str, TruthEntry]:
        rows = await self._truth.rows_by_id(projector, ids, primary=True)
        return {i: entry_of_row(r, content=True) for i, r in rows.items()}
