"""The searches of the Elasticsearch adapter (`searchsync.search.es_index.EsIndex` has them): what
an application reads back through a read alias (`search`, never a tombstone; no refresh is ever
asked), and what a rebuild's verification reads from a physical index by name. Failures become
errors in `searchsync.search.errors` only."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from elasticsearch import AsyncElasticsearch

from searchsync.search.errors import engine_call, search_refusal
from searchsync.search.port import LIVE_FILTER, StoredDocument

_PAGE: Final = 1_000


def stored_document(hit: Mapping[str, Any]) -> StoredDocument:
    """A search hit or found mget document (with ``_version``) as a `StoredDocument`."""
    return StoredDocument(str(hit["_id"]), int(hit["_version"]), dict(hit.get("_source") or {}))


class EsReads:
    """The searches, over the adapter's client."""

    _client: AsyncElasticsearch

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]:
        with engine_call(f"search {alias}", search_refusal):
            response = await self._client.search(
                index=alias, query=dict(query), size=size, version=True
            )
        return [stored_document(h) for h in response.body.get("hits", {}).get("hits", [])]

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
