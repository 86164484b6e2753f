"""What the wheel reads from each side.

- `Truth.bucket_page` (`searchsync.mysql.truth`): rows of one key range after `after`, at most
  `limit`: id, revision, deleted_at, and the projector's columns only when `content` is asked.
- `IndexSide.bucket_page`: documents of one ``sync_hash`` range after `after`: ``_id``,
  ``_version`` (the external version: ``source_revision``), ``projection_schema_version``,
  ``is_deleted``, ``sync_hash``; ``projection_hash`` and the whole ``_source`` only when
  `content` is asked.
- A page resumes after a `BucketCursor`, the (bucket key, id) of the last entry the side
  returned; each side pages in an order of its own, (key, id) where the key is indexed, id alone
  where it is not, and the caller only hands back what the side returned last.
- `IndexSide.strays`: every document outside the key space (no ``sync_hash``, or one outside
  ``[0, 2^32)``), which no bucket's range returns, in pages of at most `limit` light entries, in
  an order of the side's own; the whole read is one point in time where the side has one.
- `IndexSide.by_ids` and `truth_by_ids`: the settle re-check of findings (always with content).

Elasticsearch: `searchsync.ops.repair.es_side`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any, Protocol

from searchsync.mysql.truth import Truth, TruthEntry
from searchsync.mysql.truth_buckets import entry_of_row
from searchsync.ops.repair.model import IndexEntry
from searchsync.projection import Projector
from searchsync.types import BucketCursor

__all__ = ["IndexSide", "entry_of_source", "truth_by_ids"]


class IndexSide(Protocol):
    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[IndexEntry]: ...

    def strays(self, alias: str, limit: int) -> AsyncGenerator[list[IndexEntry], None]: ...

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]: ...


async def truth_by_ids(
    truth: Truth, projector: Projector, ids: Sequence[str]
) -> dict[str, TruthEntry]:
    """The rows of `ids` read from the primary, as entries with content (the settle re-check)."""
    rows = await truth.rows_by_id(projector, ids, primary=True)
    return {i: entry_of_row(r, content=True) for i, r in rows.items()}


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
