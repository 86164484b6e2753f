"""The read port (`SearchReader`, used by `searchsync.read`): real-time versions by mget through the
write alias, and searches (a read alias never returns a tombstone); no refresh is ever asked. No
answer, 429 or 5xx raises `TransientError` (``ALIAS_MISSING`` for a missing alias), a refused query
`InvalidRequest`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from searchsync.search.errors import engine_call, search_refusal
from searchsync.search.es_index import EsIndex, stored_document
from searchsync.search.port import StoredDocument


class SearchReader(Protocol):
    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]: ...

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]: ...


class EsSearchReader(EsIndex):
    """`SearchReader` over `AsyncElasticsearch` (the caller closes the client)."""

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]:
        with engine_call(f"search {alias}", search_refusal):
            response = await self._client.search(
                index=alias, query=dict(query), size=size, version=True
            )
        return [stored_document(h) for h in response.body.get("hits", {}).get("hits", [])]
