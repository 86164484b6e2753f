"""What the rebuild's verification and sweep read from an index by its physical name: the port
`IndexReader` and its adapter `EsIndexReader` (cluster failures raise `TransientError`)."""

from __future__ import annotations

from typing import Any, Final, Protocol

from elasticsearch import AsyncElasticsearch

from searchsync.search.errors import engine_call
from searchsync.search.es_index import stored_document
from searchsync.search.port import LIVE_FILTER, StoredDocument

_PAGE: Final = 1_000


class IndexReader(Protocol):
    async def refresh(self, index: str) -> None: ...

    async def count(self, index: str) -> int:
        """Documents in `index` (as of the last refresh)."""

    async def deleted_ids(self, index: str) -> list[str]:
        """Ids of every ``is_deleted: true`` document, sorted."""

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        """Up to `size` documents chosen at random (the same for the same seed and data)."""

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        """The ids of the `k` best live documents for ``match: {field: text}`` with every word
        required (``operator: and``), so a title finds its own few documents, not ties."""

    async def other_schema(self, index: str, schema_version: int) -> list[tuple[str, int]]:
        """(id, stored version) of every document whose ``projection_schema_version`` is not
        `schema_version` (missing counts as other), sorted by id."""


class EsIndexReader:
    def __init__(self, client: AsyncElasticsearch) -> None:
        self._client = client

    async def refresh(self, index: str) -> None:
        with engine_call(f"refresh {index}"):
            await self._client.indices.refresh(index=index)

    async def count(self, index: str) -> int:
        with engine_call(f"count {index}"):
            response = await self._client.count(index=index)
        return int(response["count"])

    async def deleted_ids(self, index: str) -> list[str]:
        hits = await self._all_hits(index, {"term": {"is_deleted": True}}, version=False)
        return [hit["_id"] for hit in hits]

    async def other_schema(self, index: str, schema_version: int) -> list[tuple[str, int]]:
        query = {"bool": {"must_not": [{"term": {"projection_schema_version": schema_version}}]}}
        hits = await self._all_hits(index, query, version=True)
        return [(hit["_id"], int(hit["_version"])) for hit in hits]

    async def _all_hits(
        self, index: str, query: dict[str, Any], *, version: bool
    ) -> list[dict[str, Any]]:
        """Every hit of `query` (no source), by id, page after page."""
        hits: list[dict[str, Any]] = []
        extra: dict[str, Any] = {"version": True} if version else {}
        while True:
            with engine_call(f"search {index}"):
                response = await self._client.search(
                    index=index,
                    query=query,
                    sort=[{"id": "asc"}],
                    size=_PAGE,
                    source=False,
                    track_total_hits=False,
                    **extra,
                )
            page = response["hits"]["hits"]
            hits.extend(page)
            if len(page) < _PAGE:
                return hits
            extra["search_after"] = page[-1]["sort"]

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        if size < 1:
            return []
        query = {"function_score": {"random_score": {"seed": seed, "field": "_seq_no"}}}
        with engine_call(f"search {index}"):
            response = await self._client.search(
                index=index, query=query, size=size, version=True, track_total_hits=False
            )
        return [stored_document(hit) for hit in response["hits"]["hits"]]

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        match = {field: {"query": text, "operator": "and"}}
        query = {"bool": {"must": [{"match": match}], "filter": [dict(LIVE_FILTER)]}}
        with engine_call(f"search {index}"):
            response = await self._client.search(
                index=index, query=query, size=k, source=False, track_total_hits=False
            )
        return [hit["_id"] for hit in response["hits"]["hits"]]
