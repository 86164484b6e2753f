"""What the rebuild's verification reads from an index (by its physical name).

`IndexReader` is the narrow port: counts, the ids of ``is_deleted: true`` documents, the
documents of another schema version (the sweep after a swap), a random
sample of stored documents with their versions, and the top-k ids of a ``match`` query over
live documents. `EsIndexReader` implements it on a real cluster, `InMemoryIndexReader` over
`searchsync.search.fake.InMemoryIndex`. Failures of the cluster raise `TransientError`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final, Protocol

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from searchsync.errors import ErrorCode, TransientError
from searchsync.search.fake import InMemoryIndex
from searchsync.search.port import LIVE_FILTER
from searchsync.search.reads import StoredDocument

__all__ = ["EsIndexReader", "InMemoryIndexReader", "IndexReader", "StoredDocument"]

_PAGE: Final = 1_000


class IndexReader(Protocol):
    async def refresh(self, index: str) -> None: ...

    async def count(self, index: str) -> int:
        """Documents in `index` (as of the last refresh)."""
        ...

    async def deleted_ids(self, index: str) -> list[str]:
        """Ids of every ``is_deleted: true`` document, sorted."""
        ...

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        """Up to `size` documents chosen at random (the same for the same seed and data)."""
        ...

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        """The ids of the `k` best live documents for ``match: {field: text}`` with every word
        required (``operator: and``), so a title finds its own few documents, not ties."""
        ...

    async def other_schema(self, index: str, schema_version: int) -> list[tuple[str, int]]:
        """(id, stored version) of every document whose ``projection_schema_version`` is not
        `schema_version` (missing counts as other), sorted by id."""
        ...


class EsIndexReader:
    def __init__(self, client: AsyncElasticsearch) -> None:
        self._client = client

    async def refresh(self, index: str) -> None:
        with _translated(f"refresh {index}"):
            await self._client.indices.refresh(index=index)

    async def count(self, index: str) -> int:
        with _translated(f"count {index}"):
            response = await self._client.count(index=index)
        return int(response["count"])

    async def deleted_ids(self, index: str) -> list[str]:
        ids: list[str] = []
        after: list[Any] | None = None
        while True:
            extra: dict[str, Any] = {} if after is None else {"search_after": after}
            with _translated(f"search {index}"):
                response = await self._client.search(
                    index=index,
                    query={"term": {"is_deleted": True}},
                    sort=[{"id": "asc"}],
                    size=_PAGE,
                    source=False,
                    track_total_hits=False,
                    **extra,
                )
            hits = response["hits"]["hits"]
            ids.extend(hit["_id"] for hit in hits)
            if len(hits) < _PAGE:
                return ids
            after = hits[-1]["sort"]

    async def other_schema(self, index: str, schema_version: int) -> list[tuple[str, int]]:
        query = {"bool": {"must_not": [{"term": {"projection_schema_version": schema_version}}]}}
        found: list[tuple[str, int]] = []
        after: list[Any] | None = None
        while True:
            extra: dict[str, Any] = {} if after is None else {"search_after": after}
            with _translated(f"search {index}"):
                response = await self._client.search(
                    index=index,
                    query=query,
                    sort=[{"id": "asc"}],
                    size=_PAGE,
                    source=False,
                    version=True,
                    track_total_hits=False,
                    **extra,
                )
            hits = response["hits"]["hits"]
            found.extend((hit["_id"], int(hit["_version"])) for hit in hits)
            if len(hits) < _PAGE:
                return found
            after = hits[-1]["sort"]

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        if size < 1:
            return []
        query = {"function_score": {"random_score": {"seed": seed, "field": "_seq_no"}}}
        with _translated(f"search {index}"):
            response = await self._client.search(
                index=index, query=query, size=size, version=True, track_total_hits=False
            )
        return [
            StoredDocument(hit["_id"], int(hit["_version"]), dict(hit["_source"]))
            for hit in response["hits"]["hits"]
        ]

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        match = {field: {"query": text, "operator": "and"}}
        query = {"bool": {"must": [{"match": match}], "filter": [dict(LIVE_FILTER)]}}
        with _translated(f"search {index}"):
            response = await self._client.search(
                index=index, query=query, size=k, source=False, track_total_hits=False
            )
        return [hit["_id"] for hit in response["hits"]["hits"]]


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


@contextmanager
def _translated(doing: str) -> Iterator[None]:
    try:
        yield
    except ApiError as exc:
        raise TransientError(ErrorCode.ES_UNEXPECTED, f"{doing}: {exc}") from exc
    except TransportError as exc:
        raise TransientError(ErrorCode.ES_UNAVAILABLE, f"{doing}: {exc}") from exc
