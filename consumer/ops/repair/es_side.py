"""`IndexSide` on Elasticsearch: one ``range`` query on ``sync_hash`` per bucket page, sorted by
``id`` with ``search_after`` (docs/design.md, "Repair"). Reads through the alias."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from consumer.errors import ErrorCode, TransientError
from consumer.ops.repair.model import IndexEntry
from consumer.ops.repair.sides import entry_of_source

__all__ = ["EsIndexSide"]

_HITS = ["hits.hits._id", "hits.hits._version", "hits.hits._source"]  # nothing else parsed
# what the revision and flag checks compare (the revision is the external `_version`); the hash
# and the body only where content is checked
_LIGHT = ["projection_schema_version", "is_deleted"]


class EsIndexSide:
    def __init__(self, client: AsyncElasticsearch) -> None:
        self._client = client

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after_id: str | None, limit: int, *, content: bool
    ) -> list[IndexEntry]:
        body: dict[str, Any] = {
            "query": {"range": {"sync_hash": {"gte": lo, "lt": hi}}},
            "sort": [{"id": "asc"}],
            "size": limit,
            "version": True,
            "track_total_hits": False,
        }
        if after_id is not None:
            body["search_after"] = [after_id]
        if not content:
            body["_source"] = _LIGHT
        try:
            response = await self._client.search(index=alias, body=body, filter_path=_HITS)
        except (ApiError, TransportError) as exc:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"search {alias}: {exc}") from exc
        hits = response.body.get("hits", {}).get("hits", [])  # filter_path drops empty hits
        return [
            entry_of_source(h["_id"], int(h["_version"]), h.get("_source") or {}, content=content)
            for h in hits
        ]

    async def by_ids(self, alias: str, ids: Sequence[str]) -> dict[str, IndexEntry]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        try:
            response = await self._client.mget(index=alias, ids=wanted, realtime=True)
        except (ApiError, TransportError) as exc:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"mget {alias}: {exc}") from exc
        return {
            d["_id"]: entry_of_source(d["_id"], int(d["_version"]), d["_source"], content=True)
            for d in response.body["docs"]
            if d.get("found")
        }
