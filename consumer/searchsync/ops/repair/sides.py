"""What the wheel reads from each side: `Truth.bucket_page` (`searchsync.mysql.truth`) and
`IndexSide.bucket_page` give one key range's entries after a `BucketCursor`, at most `limit`, with
content only when asked; `IndexSide.strays` pages the documents outside the key space; `by_ids`
and `truth_by_ids` read entries again by id, with content."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any, Protocol

from searchsync.mysql.truth import Truth, TruthEntry
from searchsync.mysql.truth_buckets import entry_of_row
from searchsync.ops.repair.model import IndexEntry
from searchsync.projection import Projector
from searchsync.types import BucketCursor


class IndexSide(Protocol):
    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[IndexEntry]: ...

    def strays(self, alias: str, limit: int) -> AsyncGenerator[list[IndexEntry], None]: ...

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]: ...


async def truth_by_ids(
    truth: Truth, projector: Projector, ids: Sequence[str]
) -> dict[str, TruthEntry]:
    """The rows of `ids` read from the primary, as entries with content."""
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
