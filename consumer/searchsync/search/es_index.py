"""`EsIndex`, the `SearchEngine` port on Elasticsearch (and on OpenSearch through
`OpenSearchClient`): bulk ``index`` actions with external versions through the alias, mget, one
`ItemResult` per action; the reads of `searchsync.search.queries`, the purge's of
`searchsync.search.tombstones` and the indices and aliases of `searchsync.search.elasticsearch`.
`BulkSizer` cuts bulks by count and bytes."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from searchsync.errors import ErrorCode, TransientError
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.errors import (
    BAD_RESPONSE_ERROR,
    NO_RESPONSE,
    engine_call,
    es_error,
    read_refusal,
)
from searchsync.search.port import IndexOp, ItemResult, StoredDocument
from searchsync.search.queries import EsReads, stored_document
from searchsync.search.tombstones import EsTombstones

_TURNS_TO_SEND: Final = 2
"""Turns of the event loop a bulk request takes to put its body on the socket: one for the
client's request coroutine, one for aiohttp's body writer (a task of its own before Python
3.12). Only after them is the next request encoded."""


@dataclass(frozen=True, slots=True)
class EncodedBulk:
    ops: list[IndexOp]
    body: bytes


@dataclass(frozen=True, slots=True)
class BulkSizer:
    """Splits ops into bulks of at most `max_actions` ops and about `max_bytes` NDJSON bytes; a
    larger op travels alone (keep `max_bytes` well below ``http.max_content_length``)."""

    max_actions: int = 500
    max_bytes: int = 5 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.max_actions < 1 or self.max_bytes < 1:
            raise ValueError("max_actions and max_bytes must be >= 1")

    def encode(self, ops: Sequence[IndexOp]) -> Iterator[EncodedBulk]:
        """The bulks, each op's action line serialized once."""
        chunk: list[IndexOp] = []
        parts: list[bytes] = []
        size = 0
        for op in ops:
            action = op.action_json()
            cost = len(action) + len(op.body_json) + 2
            if chunk and (len(chunk) >= self.max_actions or size + cost > self.max_bytes):
                yield EncodedBulk(chunk, b"".join(parts))
                chunk, parts, size = [], [], 0
            chunk.append(op)
            parts += (action, b"\n", op.body_json, b"\n")
            size += cost
        if chunk:
            yield EncodedBulk(chunk, b"".join(parts))


class EsIndex(EsReads, EsTombstones, EsIndexAdmin):
    """`SearchEngine` over `AsyncElasticsearch` (or `OpenSearchClient`); bulks run one after
    another, in order. Only the
    rebuild turns `require_alias` off, to fill its physical index (docs/design.md, Rebuild)."""

    def __init__(
        self,
        client: AsyncElasticsearch,
        *,
        sizer: BulkSizer | None = None,
        require_alias: bool = True,
    ) -> None:
        self._client = client
        self._sizer = sizer if sizer is not None else BulkSizer()
        self._require_alias = require_alias

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        """One request in flight at a time, in order; the next bulk is encoded while one is in
        flight, and an answer parsed while the next is."""
        bulks = self._sizer.encode(ops)
        bulk = next(bulks, None)
        if bulk is None:
            return []
        if len(bulk.ops) == len(ops):  # the only request: nothing to overlap
            return _parse(bulk, await self._send(bulk))
        results: list[ItemResult] = []
        sending = asyncio.ensure_future(self._send(bulk))
        try:
            await _let_it_leave()
            following = next(bulks, None)  # encoded while `bulk` is in flight
            while following is not None:
                answer = await sending
                sending = asyncio.ensure_future(self._send(following))
                await _let_it_leave()
                results.extend(_parse(bulk, answer))  # while `following` is in flight
                bulk, following = following, next(bulks, None)
            results.extend(_parse(bulk, await sending))
            return results
        finally:
            sending.cancel()  # a no-op once done; else the caller was cancelled

    async def _send(self, bulk: EncodedBulk) -> Any:
        """One bulk request: the answer's body (a dict), or the results of its ops (a list) when it
        failed."""
        try:
            # the serializer passes encoded bytes through; the stubs only know dicts
            response = await self._client.bulk(
                operations=cast(Any, bulk.body),
                require_alias=self._require_alias,
                filter_path="items.*.status,items.*.error.type,items.*.error.reason",
            )
        except (ApiError, TransportError) as exc:
            error = es_error(exc)
            return [ItemResult(op, error.status, error.type, error.reason) for op in bulk.ops]
        return response.body

    async def _mget(
        self, alias: str, ids: Sequence[str], *, versions: bool
    ) -> dict[str, dict[str, Any] | None]:
        """The real-time mget's found doc per distinct id of `ids` (None: absent; only `versions`:
        no ``_source``); a failed request or document raises its `TransientError`."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        with engine_call(f"mget {alias}", read_refusal):
            options: dict[str, Any] = {"source": False} if versions else {}
            response = await self._client.mget(index=alias, ids=wanted, **options, realtime=True)
        docs: list[dict[str, Any]] = response.body.get("docs", [])
        for doc in docs:
            error = doc.get("error")
            if error is not None:
                etype = error.get("type") if isinstance(error, dict) else str(error)
                missing = versions and etype == "index_not_found_exception"
                code = ErrorCode.ALIAS_MISSING if missing else ErrorCode.ES_MGET
                raise TransientError(code, f"mget {alias}/{doc.get('_id')}: {etype}")
        found = {doc["_id"]: doc for doc in docs if doc.get("found")}
        return {doc_id: found.get(doc_id) for doc_id in wanted}

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        docs = await self._mget(alias, ids, versions=True)
        return {i: None if doc is None else int(doc["_version"]) for i, doc in docs.items()}

    async def get_documents(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredDocument | None]:
        docs = await self._mget(alias, ids, versions=False)
        return {i: None if doc is None else stored_document(doc) for i, doc in docs.items()}

    async def refresh(self, index: str) -> None:
        with engine_call(f"refresh {index}"):
            await self._client.indices.refresh(index=index)


async def _let_it_leave() -> None:
    """The `_TURNS_TO_SEND` event loop turns a started request takes to send its body."""
    for _ in range(_TURNS_TO_SEND):
        await asyncio.sleep(0)


def _parse(bulk: EncodedBulk, answer: Any) -> list[ItemResult]:
    """One result per op of `bulk`, from `_send`'s answer."""
    if isinstance(answer, list):  # the request failed
        return answer
    chunk = bulk.ops
    items = answer.get("items") if isinstance(answer, dict) else None
    if not isinstance(items, list) or len(items) != len(chunk):
        return [ItemResult(op, NO_RESPONSE, BAD_RESPONSE_ERROR, "bulk items") for op in chunk]
    results: list[ItemResult] = []
    for op, item in zip(chunk, items, strict=True):
        detail: dict[str, Any] = {}
        if isinstance(item, dict) and item:
            detail = next(iter(item.values()))
        error = detail.get("error")
        etype = reason = None
        if isinstance(error, dict):
            etype, reason = error.get("type"), error.get("reason")
        results.append(ItemResult(op, int(detail.get("status", NO_RESPONSE)), etype, reason))
    return results
