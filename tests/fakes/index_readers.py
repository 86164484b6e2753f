"""The reads of the `SearchEngine` fake (`tests.fakes.search_index.InMemoryIndex` has them): a
rebuild's reads of a physical index, and the repair wheel's bucket pages and strays through an
alias (the stored ``sync_hash`` selects the bucket).

`fail_on_page` (1-based, counted in `pages` over both) and `fail_strays` raise `ConnectionError`,
as a node that went away mid-read."""

from __future__ import annotations

import random
import re
from collections.abc import AsyncGenerator, Callable
from datetime import datetime
from typing import Any

from searchsync.errors import ErrorCode, TransientError
from searchsync.search.port import StoredDocument
from searchsync.types import HASH_SPACE, BucketCursor

from tests.fakes.search_state import IndexState, StoredDoc, utc_now

__all__ = ["IndexReads"]

_LIGHT_FIELDS = ("id", "projection_schema_version", "is_deleted", "sync_hash")


class IndexReads(IndexState):
    def __init__(self, *, clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__(clock=clock)
        self.pages = 0
        self.fail_on_page: int | None = None
        self.fail_strays = False

    # -- a rebuild's reads of a physical index --------------------------------------------------

    def _docs(self, index: str) -> dict[str, StoredDoc]:
        if index not in self.indices:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no index {index}")
        return self.indices[index].docs

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
        """Live documents with every word of `text`, the fewest words first (a length norm)."""
        words = set(_words(text))
        scored = []
        for doc_id, doc in self._docs(index).items():
            have = set(_words(str(doc.body.get(field, ""))))
            if doc.body.get("is_deleted") is False and words and words <= have:
                scored.append((len(have), doc_id))
        return [doc_id for _, doc_id in sorted(scored)[:k]]

    # -- the repair wheel's reads through an alias ------------------------------------------------

    def _aliased(self, alias: str) -> dict[str, StoredDoc]:
        target = self.alias_target(alias)
        return {} if target is None else self.indices[target].docs

    def _page(self) -> None:
        self.pages += 1
        if self.fail_on_page is not None and self.pages >= self.fail_on_page:
            raise ConnectionError("injected: the index failed mid-read")

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[StoredDocument]:
        self._page()
        docs = self._aliased(alias)
        ids = sorted(
            i
            for i, d in docs.items()
            if (after is None or i > after[1])
            and _keyed(d.body.get("sync_hash"))
            and lo <= d.body["sync_hash"] < hi
        )
        return [_read(i, docs[i], content) for i in ids[:limit]]

    async def strays(self, alias: str, limit: int) -> AsyncGenerator[list[StoredDocument], None]:
        """Pages in id order (Elasticsearch's order is its own); each counts in `pages`."""
        docs = self._aliased(alias)
        ids = sorted(i for i, d in docs.items() if not _keyed(d.body.get("sync_hash")))
        start = 0
        while True:
            self._page()
            if self.fail_strays:
                raise ConnectionError("injected: the index failed mid-read of the strays")
            found = ids[start : start + limit]
            if found:
                yield [_read(i, docs[i], False) for i in found]
            if len(found) < limit:
                return
            start += limit


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _keyed(value: Any) -> bool:
    """A ``sync_hash`` some bucket's key range holds."""
    return value.__class__ is int and 0 <= value < HASH_SPACE


def _read(doc_id: str, doc: StoredDoc, content: bool) -> StoredDocument:
    """What a page reads of a document: all of it with content, else the light fields (no
    ``projection_hash``), as Elasticsearch's doc-value read does."""
    body = doc.body if content else {k: doc.body[k] for k in _LIGHT_FIELDS if k in doc.body}
    return StoredDocument(doc_id, doc.version, dict(body))
