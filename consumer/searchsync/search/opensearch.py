"""OpenSearch behind the search port: `OpenSearchClient` takes the ``AsyncElasticsearch`` calls the
adapters make and raises that client's errors, so every adapter serves both engines. It bridges
OpenSearch 2's point in time (``pit_id``), ``_id`` as scan tiebreaker for ``_shard_doc``, and the
absent product header (docs/design.md, "Search engines")."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import orjson
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig, ObjectApiResponse
from elastic_transport import ConnectionError as EsConnectionError
from elastic_transport import ConnectionTimeout as EsConnectionTimeout
from elasticsearch import ApiError
from elasticsearch.exceptions import HTTP_EXCEPTIONS
from opensearchpy import AsyncOpenSearch, JSONSerializer, OpenSearchWarning
from opensearchpy import ConnectionError as OsConnectionError
from opensearchpy import ConnectionTimeout as OsConnectionTimeout
from opensearchpy import TransportError as OsTransportError

_NDJSON: Final = {"content-type": "application/x-ndjson"}
_SORT_FOR: Final = {"_shard_doc": "_id"}  # Elasticsearch's PIT tiebreaker, OpenSearch's stand-in
_ID_FIELDDATA: Final = "Loading the fielddata on the _id field is deprecated"
# keyword arguments of a search that travel in the query string; the rest form the body
_SEARCH_PARAMS: Final = {"filter_path": "filter_path", "source_includes": "_source_includes"}
_BODY_NAMES: Final = {"source": "_source", "from_": "from"}


Answer = ObjectApiResponse[Any]


def _answer(body: Any, status: int = 200) -> Answer:
    """`body` as the Elasticsearch client answers (``.body``, ``[key]``, ``.meta.status``)."""
    return ObjectApiResponse(body, _meta(status))


def _meta(status: int) -> ApiResponseMeta:
    return ApiResponseMeta(status, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "os", 0))


class _OrjsonSerializer(JSONSerializer):
    """orjson both ways; bytes and str pass through."""

    def loads(self, s: Any) -> Any:
        return orjson.loads(s)

    def dumps(self, data: Any) -> Any:
        if isinstance(data, str | bytes):
            return data
        return orjson.dumps(data)


class OpenSearchClient:
    """The ``AsyncElasticsearch`` calls searchsync makes, on an OpenSearch node; close it."""

    def __init__(
        self,
        hosts: Sequence[str],
        *,
        request_timeout: float,
        ignore_status: tuple[int, ...] = (),
        client: AsyncOpenSearch | None = None,
        **options: Any,
    ) -> None:
        self._os = client or AsyncOpenSearch(
            list(hosts),
            timeout=request_timeout,
            max_retries=0,
            retry_on_timeout=False,
            retry_on_status=(),
            serializer=_OrjsonSerializer(),
            **options,
        )
        self._ignore = ignore_status
        self.indices = _Indices(self)
        # the PIT scans sort by `_id` on purpose: no deprecation warning on every scan
        warnings.filterwarnings("ignore", _ID_FIELDDATA, OpenSearchWarning)

    def options(self, *, ignore_status: int | tuple[int, ...] = ()) -> OpenSearchClient:
        """The same connection, returning the given error statuses as answers."""
        statuses = (ignore_status,) if isinstance(ignore_status, int) else tuple(ignore_status)
        return OpenSearchClient((), request_timeout=0, ignore_status=statuses, client=self._os)

    async def close(self) -> None:
        await self._os.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        try:
            return _answer(
                await self._os.transport.perform_request(
                    method, path, params=query, body=body, headers=headers
                )
            )
        except OsConnectionTimeout as exc:  # opensearch-py's errors as the Elasticsearch client's
            raise EsConnectionTimeout(str(exc)) from exc
        except OsConnectionError as exc:
            raise EsConnectionError(str(exc)) from exc
        except OsTransportError as exc:
            status = exc.status_code if isinstance(exc.status_code, int) else 0
            error = exc.info if isinstance(exc.info, dict) else {"error": str(exc.error)}
            if status in self._ignore:  # the answer, as `options(ignore_status=...)` asked
                return _answer(error, status)
            raise HTTP_EXCEPTIONS.get(status, ApiError)(
                str(exc.error), _meta(status), error
            ) from exc

    async def bulk(self, *, operations: Any, **params: Any) -> Answer:
        body = operations
        if not isinstance(operations, bytes | str):
            body = b"".join(orjson.dumps(line) + b"\n" for line in operations)
        return await self.request("POST", "/_bulk", params=params, body=body, headers=_NDJSON)

    async def mget(
        self, *, index: str, ids: list[str], source: Any = None, **params: Any
    ) -> Answer:
        params = params | ({} if source is None else {"_source": source})
        return await self.request(
            "POST", f"/{_name(index)}/_mget", params=params, body={"ids": ids}
        )

    async def get(self, *, index: str, id: str, **params: Any) -> Answer:
        return await self.request("GET", _doc(index, id), params=params)

    async def index(self, *, index: str, id: str, document: Any, **params: Any) -> Answer:
        return await self.request("PUT", _doc(index, id), params=params, body=document)

    async def delete(self, *, index: str, id: str, **params: Any) -> Answer:
        return await self.request("DELETE", _doc(index, id), params=params)

    async def exists(self, *, index: str, id: str) -> bool:
        return bool((await self.request("HEAD", _doc(index, id))).body)

    async def count(self, *, index: str, query: Any = None) -> Answer:
        body = None if query is None else {"query": query}
        return await self.request("POST", f"/{_name(index)}/_count", body=body)

    async def search(
        self, *, index: str | None = None, body: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> Answer:
        params = {_SEARCH_PARAMS[k]: kwargs.pop(k) for k in list(kwargs) if k in _SEARCH_PARAMS}
        request = dict(body or {}) | {_BODY_NAMES.get(k, k): v for k, v in kwargs.items()}
        if "sort" in request and "pit" in request:
            request["sort"] = [_pit_sort(key) for key in request["sort"]]
        path = "/_search" if index is None else f"/{_name(index)}/_search"
        return await self.request("POST", path, params=params, body=request)

    async def open_point_in_time(self, *, index: str, keep_alive: str) -> Answer:
        path = f"/{_name(index)}/_search/point_in_time"
        opened = await self.request("POST", path, params={"keep_alive": keep_alive})
        return _answer({"id": opened["pit_id"]})

    async def close_point_in_time(self, *, id: str) -> Answer:
        return await self.request("DELETE", "/_search/point_in_time", body={"pit_id": [id]})


class _Indices:
    def __init__(self, client: OpenSearchClient) -> None:
        self._c = client

    async def exists(self, *, index: str) -> bool:
        return bool((await self._c.request("HEAD", f"/{_name(index)}")).body)

    async def exists_alias(self, *, name: str, index: str) -> bool:
        path = f"/{_name(index)}/_alias/{_name(name)}"
        return bool((await self._c.request("HEAD", path)).body)

    async def create(self, *, index: str, **body: Any) -> Answer:
        return await self._c.request("PUT", f"/{_name(index)}", body=body)

    async def update_aliases(self, *, actions: list[Any]) -> Answer:
        return await self._c.request("POST", "/_aliases", body={"actions": actions})

    async def get(self, *, index: str, **params: Any) -> Answer:
        return await self._c.request("GET", f"/{_name(index)}", params=params)

    async def get_alias(self, *, name: str) -> Answer:
        return await self._c.request("GET", f"/_alias/{_name(name)}")

    async def get_mapping(self, *, index: str) -> Answer:
        return await self._c.request("GET", f"/{_name(index)}/_mapping")

    async def get_settings(self, *, index: str) -> Answer:
        return await self._c.request("GET", f"/{_name(index)}/_settings")

    async def stats(self, *, index: str, metric: str) -> Answer:
        return await self._c.request("GET", f"/{_name(index)}/_stats/{metric}")

    async def delete(self, *, index: str) -> Answer:
        return await self._c.request("DELETE", f"/{_name(index)}")

    async def put_settings(self, *, index: str, settings: Mapping[str, Any]) -> Answer:
        return await self._c.request("PUT", f"/{_name(index)}/_settings", body=dict(settings))

    async def refresh(self, *, index: str) -> Answer:
        return await self._c.request("POST", f"/{_name(index)}/_refresh")


def _name(index: str) -> str:
    """An index expression as a path segment (``a,b*`` stays readable)."""
    return quote(index, safe=",*")


def _doc(index: str, doc_id: str) -> str:
    return f"/{_name(index)}/_doc/{quote(doc_id, safe='')}"


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_param(v) for v in value)
    return str(value)


def _pit_sort(key: Any) -> Any:
    if isinstance(key, str):
        return _SORT_FOR.get(key, key)
    if isinstance(key, dict):
        return {_SORT_FOR.get(field, field): order for field, order in key.items()}
    return key
