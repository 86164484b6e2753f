"""The reads of the Elasticsearch adapter (`searchsync.search.es_index.EsIndex` has them): what an
application reads back through a read alias (`search`, never a tombstone; no refresh is ever
asked), what a rebuild's verification reads from a physical index by name, and the repair wheel's
reads. Those are one ``range`` query on ``sync_hash`` per bucket page, sorted by ``id`` with
``search_after``, through the alias; a light page reads doc values only (a hit without an ``id``
value makes the page be read again with ``_source``); `strays` reads the documents outside the key
space in one point in time, sorted by ``_shard_doc``. Failures become errors in
`searchsync.search.errors` only."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, Final

from elasticsearch import AsyncElasticsearch

from searchsync.errors import ErrorCode
from searchsync.search.errors import Refused, engine_call, search_refusal
from searchsync.search.port import LIVE_FILTER, StoredDocument
from searchsync.search.tombstones import pit_pages
from searchsync.types import HASH_SPACE, BucketCursor

_PAGE: Final = 1_000

_HITS = ["hits.hits._id", "hits.hits._version", "hits.hits._source"]  # nothing else parsed
# the revision (the external `_version`) and flag checks' fields, from doc values
_LIGHT_FIELDS = ["id", "projection_schema_version", "is_deleted", "sync_hash"]
_LIGHT_HITS = ["hits.hits._version", "hits.hits.fields"]
_LIGHT: dict[str, Any] = {
    "_source": False,
    "stored_fields": "_none_",
    "docvalue_fields": _LIGHT_FIELDS,
}
_OUTSIDE_KEYS = {"bool": {"must_not": [{"range": {"sync_hash": {"gte": 0, "lt": HASH_SPACE}}}]}}
_PIT_KEEP_ALIVE = "2m"  # between two pages of the stray read
_STRAY_HITS = ["pit_id", *_HITS, "hits.hits.sort"]


def stored_document(hit: Mapping[str, Any]) -> StoredDocument:
    """A search hit or found mget document (with ``_version``) as a `StoredDocument`."""
    return StoredDocument(str(hit["_id"]), int(hit["_version"]), dict(hit.get("_source") or {}))


class EsReads:
    """The reads, over the adapter's client."""

    _client: AsyncElasticsearch

    async def _hits(
        self, index: str, refused: Refused = ErrorCode.ES_UNEXPECTED, **request: Any
    ) -> list[dict[str, Any]]:
        """The hits of one search request on `index` (none in the answer: none)."""
        with engine_call(f"search {index}", refused):
            found = (await self._client.search(index=index, **request)).body
        hits: list[dict[str, Any]] = found.get("hits", {}).get("hits", [])
        return hits

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]:
        hits = await self._hits(alias, search_refusal, query=dict(query), size=size, version=True)
        return [stored_document(h) for h in hits]

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
            page = await self._hits(
                index,
                query=query,
                sort=[{"id": "asc"}],
                size=_PAGE,
                source=False,
                track_total_hits=False,
                **extra,
            )
            hits.extend(page)
            if len(page) < _PAGE:
                return hits
            extra["search_after"] = page[-1]["sort"]

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        if size < 1:
            return []
        query = {"function_score": {"random_score": {"seed": seed, "field": "_seq_no"}}}
        hits = await self._hits(index, query=query, size=size, version=True, track_total_hits=False)
        return [stored_document(hit) for hit in hits]

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        match = {field: {"query": text, "operator": "and"}}
        query = {"bool": {"must": [{"match": match}], "filter": [dict(LIVE_FILTER)]}}
        hits = await self._hits(index, query=query, size=k, source=False, track_total_hits=False)
        return [hit["_id"] for hit in hits]

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[StoredDocument]:
        body: dict[str, Any] = {
            "query": {"range": {"sync_hash": {"gte": lo, "lt": hi}}},
            "sort": [{"id": "asc"}],
            "size": limit,
            "version": True,
            "track_total_hits": False,
        }
        if after is not None:
            body["search_after"] = [after[1]]
        away = ErrorCode.ES_UNAVAILABLE
        if not content:
            page = await self._hits(alias, away, body=body | _LIGHT, filter_path=_LIGHT_HITS)
            light = [_light(h) for h in page]
            docs = [d for d in light if d is not None]
            if len(docs) == len(light):
                return docs
            body["_source"] = _LIGHT_FIELDS[1:]  # a document without `id`: read it by `_id`
        hits = await self._hits(alias, away, body=body, filter_path=_HITS)
        return [stored_document(h) for h in hits]

    async def strays(self, alias: str, limit: int) -> AsyncGenerator[list[StoredDocument], None]:
        light = _LIGHT_FIELDS[1:]
        body = {"query": _OUTSIDE_KEYS, "size": limit, "version": True, "_source": light}
        async for hits in pit_pages(
            self._client, alias, body, _PIT_KEEP_ALIVE, ErrorCode.ES_UNAVAILABLE, _STRAY_HITS
        ):
            yield [stored_document(h) for h in hits]


def _light(hit: dict[str, Any]) -> StoredDocument | None:
    """A light hit (doc values only, the first of each); None without an ``id`` value."""
    fields = hit.get("fields")
    if not fields or "id" not in fields:
        return None
    first = {name: values[0] for name, values in fields.items() if values}
    return StoredDocument(str(first["id"]), int(hit["_version"]), first)
