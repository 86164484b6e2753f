"""The tombstone purge's values and the Elasticsearch adapter's part for it (`EsTombstones`, which
`searchsync.search.es_index.EsIndex` has): `scan_tombstones` pages a point in time on the physical
index for tombstones older than `before`; `delete_tombstones` guards each delete with
``if_seq_no``/``if_primary_term``, so a document written since stays. A failed request raises
`TransientError`; the purge can run again."""

from __future__ import annotations

import contextlib
import enum
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from elasticsearch import AsyncElasticsearch

from searchsync.errors import ErrorCode, TransientError
from searchsync.naming import check_index_name
from searchsync.projection import TOMBSTONED_AT
from searchsync.search.errors import engine_call

PIT_KEEP_ALIVE: Final = "5m"  # between two pages; each page renews it


@dataclass(frozen=True, slots=True)
class TombstoneHit:
    """One candidate as the scan saw it: what a guarded delete needs."""

    doc_id: str
    seq_no: int
    primary_term: int
    tombstoned_at: str


class DeleteResult(enum.Enum):
    DELETED = "deleted"
    CHANGED = "changed"  # 409: re-created or changed since the scan; kept
    GONE = "gone"  # 404: deleted already
    FAILED = "failed"  # anything else; kept, reported


@dataclass(frozen=True, slots=True)
class DeleteOutcome:
    hit: TombstoneHit
    result: DeleteResult
    reason: str | None = None


class EsTombstones:
    """The purge's reads and deletes, over the adapter's client."""

    _client: AsyncElasticsearch

    async def maps_tombstoned_at(self, index: str) -> bool:
        with engine_call(f"mapping of {index}"):
            found = await self._client.indices.get_mapping(index=check_index_name(index))
        return any(
            TOMBSTONED_AT in info.get("mappings", {}).get("properties", {})
            for info in found.body.values()
        )

    async def scan_tombstones(
        self, index: str, before: str, page_size: int
    ) -> AsyncIterator[list[TombstoneHit]]:
        body = {
            "query": {
                "bool": {
                    "filter": [
                        {"term": {"is_deleted": True}},
                        {"range": {TOMBSTONED_AT: {"lt": before}}},
                    ]
                }
            },
            "size": page_size,
            "seq_no_primary_term": True,
            "_source": [TOMBSTONED_AT],
        }
        async for hits in pit_pages(self._client, check_index_name(index), body, PIT_KEEP_ALIVE):
            yield [_hit(h) for h in hits]

    async def delete_tombstones(
        self, index: str, hits: Sequence[TombstoneHit]
    ) -> list[DeleteOutcome]:
        if not hits:
            return []
        name = check_index_name(index)
        actions = [
            {
                "delete": {
                    "_index": name,
                    "_id": hit.doc_id,
                    "if_seq_no": hit.seq_no,
                    "if_primary_term": hit.primary_term,
                }
            }
            for hit in hits
        ]
        with engine_call(f"delete tombstones from {index}"):
            response = await self._client.bulk(
                operations=actions,
                filter_path="items.*.status,items.*.result,items.*.error.type,items.*.error.reason",
            )
        items = response.body.get("items", [])
        if len(items) != len(hits):
            raise TransientError(
                ErrorCode.ES_UNEXPECTED,
                f"delete tombstones from {index}: {len(items)} answers for {len(hits)} deletes",
            )
        return [_outcome(hit, item) for hit, item in zip(hits, items, strict=True)]


async def pit_pages(
    client: AsyncElasticsearch,
    index: str,
    body: Mapping[str, Any],
    keep_alive: str,
    refused: ErrorCode = ErrorCode.ES_UNEXPECTED,
    filter_path: list[str] | None = None,
) -> AsyncIterator[list[dict[str, Any]]]:
    """The hits of the search `body` (with its ``size``) on `index`, page after page in one point
    in time, sorted by ``_shard_doc``; the point in time is closed at the end."""
    with engine_call(f"open a point in time on {index}", refused):
        opened = await client.open_point_in_time(index=index, keep_alive=keep_alive)
    pit: str = opened.body["id"]
    search = {**body, "sort": [{"_shard_doc": "asc"}], "track_total_hits": False}
    try:
        while True:
            search["pit"] = {"id": pit, "keep_alive": keep_alive}
            with engine_call(f"scan {index}", refused):
                found = (await client.search(body=search, filter_path=filter_path)).body
            pit = found.get("pit_id", pit)
            hits: list[dict[str, Any]] = found.get("hits", {}).get("hits", [])
            if hits:
                yield hits
            if len(hits) < search["size"]:
                return
            search["search_after"] = hits[-1]["sort"]
    finally:
        with contextlib.suppress(TransientError), engine_call("close a point in time"):
            await client.close_point_in_time(id=pit)


def _hit(raw: dict[str, Any]) -> TombstoneHit:
    tombstoned_at = str(raw.get("_source", {}).get(TOMBSTONED_AT, ""))
    seq_no, primary_term = int(raw["_seq_no"]), int(raw["_primary_term"])
    return TombstoneHit(
        raw["_id"], seq_no=seq_no, primary_term=primary_term, tombstoned_at=tombstoned_at
    )


_NOT_FOUND: Final = "no document was found"
"""A seq_no-guarded delete of a missing document is a 409 whose reason says this (both engines)."""


def _outcome(hit: TombstoneHit, item: dict[str, Any]) -> DeleteOutcome:
    answer = item.get("delete", {})
    status = int(answer.get("status", 0))
    if 200 <= status < 300:
        return DeleteOutcome(hit, DeleteResult.DELETED)
    error = answer.get("error") or {}
    if status == 404 or (status == 409 and _NOT_FOUND in str(error.get("reason"))):
        return DeleteOutcome(hit, DeleteResult.GONE)
    if status == 409:
        return DeleteOutcome(hit, DeleteResult.CHANGED)
    reason = f"{status} {error.get('type')}: {error.get('reason')}"
    return DeleteOutcome(hit, DeleteResult.FAILED, reason)
