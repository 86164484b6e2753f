"""`IndexSide` on Elasticsearch: one ``range`` query on ``sync_hash`` per bucket page, sorted by
``id`` with ``search_after``, through the alias. A light page reads doc values only (a hit without
an ``id`` value makes the page be read again with ``_source``); `strays` reads the documents
outside the key space in one point in time, sorted by ``_shard_doc``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Sequence
from typing import Any

from elastic_transport import ObjectApiResponse
from elasticsearch import AsyncElasticsearch

from searchsync.errors import ErrorCode, TransientError
from searchsync.ops.repair.buckets import HASH_SPACE
from searchsync.ops.repair.model import IndexEntry, entry_of_source
from searchsync.search.errors import engine_call
from searchsync.types import BucketCursor

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
    """The body of an Elasticsearch call; its failure as a `TransientError`."""
    with engine_call(what, ErrorCode.ES_UNAVAILABLE):
        body: dict[str, Any] = (await call).body
    return body


def _entries(hits: list[dict[str, Any]], *, content: bool) -> list[IndexEntry]:
    return [
        entry_of_source(h["_id"], int(h["_version"]), h.get("_source") or {}, content=content)
        for h in hits
    ]


class EsIndexSide:
    def __init__(self, client: AsyncElasticsearch) -> None:
        self._client = client

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[IndexEntry]:
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
            light = [_light_entry(h) for h in found.get("hits", {}).get("hits", [])]
            entries = [e for e in light if e is not None]
            if len(entries) == len(light):
                return entries
            body["_source"] = _LIGHT_FIELDS[1:]  # a document without `id`: read it by `_id`
        found = await _es(what, self._client.search(index=alias, body=body, filter_path=_HITS))
        return _entries(found.get("hits", {}).get("hits", []), content=content)  # no `hits`: none

    async def strays(self, alias: str, limit: int) -> AsyncGenerator[list[IndexEntry], None]:
        opened = self._client.open_point_in_time(index=alias, keep_alive=_PIT_KEEP_ALIVE)
        pit: str = (await _es(f"open a PIT on {alias}", opened))["id"]
        body: dict[str, Any] = {
            "query": _OUTSIDE_KEYS,
            "sort": [{"_shard_doc": "asc"}],
            "size": limit,
            "version": True,
            "track_total_hits": False,
            "_source": _LIGHT_FIELDS[1:],
        }
        try:
            while True:
                body["pit"] = {"id": pit, "keep_alive": _PIT_KEEP_ALIVE}
                search = self._client.search(body=body, filter_path=_STRAY_HITS)
                found = await _es(f"search strays of {alias}", search)
                pit = found.get("pit_id", pit)
                hits: list[dict[str, Any]] = found.get("hits", {}).get("hits", [])
                if hits:
                    yield _entries(hits, content=False)
                if len(hits) < limit:
                    return
                body["search_after"] = hits[-1]["sort"]
        finally:
            with contextlib.suppress(TransientError):
                await _es(f"close a PIT on {alias}", self._client.close_point_in_time(id=pit))

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found = await _es(
            f"mget {alias}", self._client.mget(index=alias, ids=wanted, realtime=True)
        )
        hits = [d for d in found["docs"] if d.get("found")]
        return {e.id: e for e in _entries(hits, content=True)}


def _light_entry(hit: dict[str, Any]) -> IndexEntry | None:
    """A light hit (doc values only) as an entry; None without an ``id`` value."""
    fields = hit.get("fields")
    if not fields or "id" not in fields:
        return None
    first = {name: values[0] for name, values in fields.items() if values}
    return entry_of_source(first["id"], int(hit["_version"]), first, content=False)
