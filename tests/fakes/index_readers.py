"""The fake of the index's read port `IndexSide` (what the repair wheel reads), over an
`InMemoryIndex`'s documents."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from searchsync.ops.repair.model import IndexEntry
from searchsync.ops.repair.sides import entry_of_source
from searchsync.search.fake import InMemoryIndex
from searchsync.types import BucketCursor

__all__ = ["InMemoryIndexSide"]


class InMemoryIndexSide:
    """`IndexSide` over an `InMemoryIndex` (the stored ``sync_hash`` selects the bucket)."""

    def __init__(self, index: InMemoryIndex) -> None:
        self._index = index
        self.pages = 0
        self.fail_on_page: int | None = None  # raise ConnectionError on that page (1-based)

    def _docs(self, alias: str) -> dict[str, Any]:
        target = self._index.alias_target(alias)
        return {} if target is None else self._index.indices[target].docs

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[IndexEntry]:
        self.pages += 1
        if self.fail_on_page is not None and self.pages >= self.fail_on_page:
            raise ConnectionError("injected: the index side failed mid-bucket")
        docs = self._docs(alias)
        ids = sorted(
            i
            for i, d in docs.items()
            if (after is None or i > after[1])
            and isinstance(d.body.get("sync_hash"), int)
            and lo <= d.body["sync_hash"] < hi
        )
        return [
            entry_of_source(i, docs[i].version, docs[i].body, content=content) for i in ids[:limit]
        ]

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]:
        docs = self._docs(alias)
        return {
            i: entry_of_source(i, docs[i].version, docs[i].body, content=True)
            for i in ids
            if i in docs
        }
