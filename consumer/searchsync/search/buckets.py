"""The repair wheel's reads of the Elasticsearch adapter (`searchsync.search.es_index.EsIndex` has
them): one ``range`` query on ``sync_hash`` per bucket page, sorted by ``id`` with
``search_after``, through the alias. A light page reads doc values only (a hit without an ``id``
value makes the page be read again with ``_source``); `strays` reads the documents outside the key
space in one point in time, sorted by ``_shard_doc``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from typing import Any

from elastic_transport import ObjectApiResponse
from elasticsearch import AsyncElasticsearch

from searchsync.errors import ErrorCode
from searchsync.search.errors import engine_call
from searchsync.search.port import StoredDocument
from searchsync.search.queries import stored_document
from searchsync.search.tombstones import pit_pages
from searchsync.types import HASH_SPACE, BucketCursor

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


async def _es(what: str, call: Awaitable[ObjectApiResponse[Any]]) -> dict[str, Any]:
    """The body of a call; its failure as a `TransientError` (``ES_UNAVAILABLE``)."""
    with engine_call(what, ErrorCode.ES_UNAVAILABLE):
        body: dict[str, Any] = (await call).body
    return body


class EsBuckets:
    """The bucket reads, over the adapter's client."""

    _client: AsyncElasticsearch

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
        what = f"search {alias}"
        if not content:
            search = self._client.search(index=alias, body=body | _LIGHT, filter_path=_LIGHT_HITS)
            found = await _es(what, search)
            light = [_light(h) for h in found.get("hits", {}).get("hits", [])]
            docs = [d for d in light if d is not None]
            if len(docs) == len(light):
                return docs
            body["_source"] = _LIGHT_FIELDS[1:]  # a document without `id`: read it by `_id`
        found = await _es(what, self._client.search(index=alias, body=body, filter_path=_HITS))
        return [stored_document(h) for h in found.get("hits", {}).get("hits", [])]  # none: none

    async def strays(self, alias: str, limit: int) -> AsyncGenerator[list[StoredDocument], None]:
        light = _LIGHT_FIELDS[1:]
        body = {"query": _OUTSIDE_KEYS, "size": limit, "version": True, "_source": light}
        pages = pit_pages(
            self._client, alias, body, _PIT_KEEP_ALIVE, ErrorCode.ES_UNAVAILABLE, _STRAY_HITS
        )
        async for hits in pages:
            yield [stored_document(h) for h in hits]


def _light(hit: dict[str, Any]) -> StoredDocument | None:
    """A light hit (doc values only, the first of each); None without an ``id`` value."""
    fields = hit.get("fields")
    if not fields or "id" not in fields:
        return None
    first = {name: values[0] for name, values in fields.items() if values}
    return StoredDocument(str(first["id"]), int(hit["_version"]), first)
