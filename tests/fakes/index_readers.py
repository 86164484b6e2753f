"""The fakes of the index's read ports: `IndexSide` (what the repair wheel reads) and `IndexReader`
(what the rebuild's verification reads), both over an `InMemoryIndex`'s documents."""

from __future__ import annotations

import random
import re
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from searchsync.errors import ErrorCode, TransientError
from searchsync.ops.repair.buckets import HASH_SPACE
from searchsync.ops.repair.model import IndexEntry, entry_of_source
from searchsync.search.port import StoredDocument
from searchsync.types import BucketCursor

from tests.fakes.search_index import InMemoryIndex

__all__ = ["InMemoryIndexReader", "InMemoryIndexSide"]

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


class InMemoryIndexReader:
    """`IndexReader` over an `InMemoryIndex`; `match` scores by shared lower-case words."""

    def __init__(self, index: InMemoryIndex) -> None:
        self._index = index

    def _docs(self, index: str) -> dict[str, Any]:
        if index not in self._index.indices:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no index {index}")
        return self._index.indices[index].docs

    async def refresh(self, index: str) -> None:
        self._docs(index)

    async def count(self, index: str) -> int:
        return len(self._docs(index))

    async def deleted_ids(self, index: str) -> list[str]:
        docs = self._docs(index)
        return sorted(i for i, d in docs.items() if d.body.get("is_deleted") is True)

    async def other_schema(self, index: str, schema_version: int) -> list[tuple[str, int]]:
        docs = self._docs(index)
        return [
            (i, docs[i].version)
            for i in sorted(docs)
            if docs[i].body.get("projection_schema_version") != schema_version
        ]

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        docs = self._docs(index)
        chosen = random.Random(seed).sample(sorted(docs), min(size, len(docs)))
        return [StoredDocument(i, docs[i].version, dict(docs[i].body)) for i in chosen]

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        words = set(_words(text))
        scored = []
        for doc_id, doc in self._docs(index).items():
            if doc.body.get("is_deleted") is not False:
                continue
            have = set(_words(str(doc.body.get(field, ""))))
            if words and words <= have:
                scored.append((len(have), doc_id))
        return [doc_id for _, doc_id in sorted(scored)[:k]]


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _keyed(value: Any) -> bool:
    """A ``sync_hash`` some bucket's key range holds."""
    return value.__class__ is int and 0 <= value < HASH_SPACE


def _read(body: dict[str, Any], content: bool) -> dict[str, Any]:
    """What a page reads of a document: all of it with content, else the light fields (no
    ``projection_hash``), as Elasticsearch's doc-value read does."""
    return body if content else {k: body[k] for k in _LIGHT_FIELDS if k in body}
