"""The fake of the repair wheel's `IndexSide`, over an `InMemoryIndex`'s documents."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import Any

from searchsync.ops.repair.buckets import HASH_SPACE
from searchsync.ops.repair.model import IndexEntry, entry_of_source
from searchsync.types import BucketCursor

from tests.fakes.search_index import InMemoryIndex

__all__ = ["InMemoryIndexSide"]

_LIGHT_FIELDS = ("projection_schema_version", "is_deleted", "sync_hash")


class InMemoryIndexSide:
    """`IndexSide` over an `InMemoryIndex` (the stored ``sync_hash`` selects the bucket)."""

    def __init__(self, index: InMemoryIndex) -> None:
        self._index = index
        self.pages = 0
        self.fail_on_page: int | None = None  # raise ConnectionError on that page (1-based)
        self.fail_strays = False  # raise ConnectionError on the stray read's first page

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
            and _keyed(d.body.get("sync_hash"))
            and lo <= d.body["sync_hash"] < hi
        )
        return [
            entry_of_source(i, docs[i].version, _read(docs[i].body, content), content=content)
            for i in ids[:limit]
        ]

    async def strays(self, alias: str, limit: int) -> AsyncGenerator[list[IndexEntry], None]:
        """Pages in id order (Elasticsearch's order is its own); each counts in `pages`."""
        docs = self._docs(alias)
        ids = sorted(i for i, d in docs.items() if not _keyed(d.body.get("sync_hash")))
        start = 0
        while True:
            self.pages += 1
            failing = self.fail_on_page is not None and self.pages >= self.fail_on_page
            if failing or self.fail_strays:
                raise ConnectionError("injected: the index side failed mid-read of the strays")
            found = ids[start : start + limit]
            if found:
                yield [
                    entry_of_source(i, docs[i].version, _read(docs[i].body, False), content=False)
                    for i in found
                ]
            if len(found) < limit:
                return
            start += limit

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]:
        docs = self._docs(alias)
        return {
            i: entry_of_source(i, docs[i].version, docs[i].body, content=True)
            for i in ids
            if i in docs
        }


def _keyed(value: Any) -> bool:
    """A ``sync_hash`` some bucket's key range holds."""
    return value.__class__ is int and 0 <= value < HASH_SPACE


def _read(body: dict[str, Any], content: bool) -> dict[str, Any]:
    """What a page reads of a document: all of it with content, else the light fields (no
    ``projection_hash``), as Elasticsearch's doc-value read does."""
    return body if content else {k: body[k] for k in _LIGHT_FIELDS if k in body}
