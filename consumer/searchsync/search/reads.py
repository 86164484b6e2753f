"""The read port (`SearchReader`, used by `searchsync.read`): real-time versions by mget through the
write alias, and searches (a read alias never returns a tombstone); no refresh is ever asked. No
answer, 429 or 5xx raises `TransientError` (``ALIAS_MISSING`` for a missing alias), a refused query
`InvalidRequest`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from elastic_transport import TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from searchsync.errors import ErrorCode, InvalidRequest, TransientError
from searchsync.search.errors import es_error, status_code
from searchsync.search.es_index import EsIndex


@dataclass(frozen=True, slots=True)
class StoredDocument:
    doc_id: str
    version: int
    source: dict[str, Any]


class SearchReader(Protocol):
    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]: ...

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]: ...


class EsSearchReader:
    """`SearchReader` over `AsyncElasticsearch` (the caller closes the client)."""

    def __init__(self, client: AsyncElasticsearch) -> None:
        self._client = client
        self._index = EsIndex(client)

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        return await self._index.get_versions(alias, ids)

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]:
        try:
            response = await self._client.search(
                index=alias, query=dict(query), size=size, version=True
            )
        except ApiError as exc:
            error = es_error(exc)
            message = f"search {alias}: {error.type}: {error.reason}"
            if error.type == "index_not_found_exception":
                raise TransientError(ErrorCode.ALIAS_MISSING, message) from exc
            if error.status == 400:
                raise InvalidRequest(message) from exc
            raise TransientError(status_code(error.status, error.type), message) from exc
        except TransportError as exc:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"search {alias}: {exc}") from exc
        return [
            StoredDocument(str(h["_id"]), int(h["_version"]), dict(h.get("_source") or {}))
            for h in response.body.get("hits", {}).get("hits", [])
        ]
