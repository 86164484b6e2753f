"""OpenSearch behind the search port: `OpenSearchClient` is the ``AsyncElasticsearch`` client with
its requests sent through opensearch-py's transport and that transport's errors raised as the
Elasticsearch client's, so every adapter serves both engines. It bridges OpenSearch 2's point in
time (``pit_id``), ``_id`` as scan tiebreaker for ``_shard_doc``, and the absent product header
(docs/design.md, "Search engines")."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import orjson
from elastic_transport import (
    ApiResponse,
    ApiResponseMeta,
    HeadApiResponse,
    HttpHeaders,
    NodeConfig,
    ObjectApiResponse,
)
from elastic_transport import ConnectionError as EsConnectionError
from elastic_transport import ConnectionTimeout as EsConnectionTimeout
from elasticsearch import ApiError, AsyncElasticsearch
from elasticsearch.exceptions import HTTP_EXCEPTIONS
from opensearchpy import AsyncOpenSearch, JSONSerializer, OpenSearchWarning
from opensearchpy import ConnectionError as OsConnectionError
from opensearchpy import ConnectionTimeout as OsConnectionTimeout
from opensearchpy import TransportError as OsTransportError

_SORT_FOR: Final = {"_shard_doc": "_id"}  # Elasticsearch's PIT tiebreaker, OpenSearch's stand-in
_ID_FIELDDATA: Final = "Loading the fielddata on the _id field is deprecated"
_PIT: Final = "/_search/point_in_time"  # OpenSearch's point in time API; Elasticsearch's `_pit`


def _meta(status: int) -> ApiResponseMeta:
    return ApiResponseMeta(status, "1.1", HttpHeaders(), 0.0, NodeConfig("http", "os", 0))


class _OrjsonSerializer(JSONSerializer):
    """orjson both ways; bytes and str pass through."""

    def loads(self, s: Any) -> Any:
        return orjson.loads(s)

    def dumps(self, data: Any) -> Any:
        return data if isinstance(data, str | bytes) else orjson.dumps(data)


class OpenSearchClient(AsyncElasticsearch):
    """``AsyncElasticsearch`` on an OpenSearch node (its transport: an ``AsyncOpenSearch``, made
    from `hosts` and `options` unless `client` is given); close it."""

    def __init__(
        self,
        hosts: Sequence[str] = (),
        *,
        request_timeout: float = 10.0,
        client: AsyncOpenSearch | None = None,
        _transport: Any = None,  # `options()` makes a copy with the same connection
        **options: Any,
    ) -> None:
        opensearch: Any = _transport or client
        if opensearch is None:
            opensearch = AsyncOpenSearch(
                list(hosts),
                timeout=request_timeout,
                max_retries=0,
                retry_on_timeout=False,
                retry_on_status=(),
                serializer=_OrjsonSerializer(),
                **options,
            )
        super().__init__(_transport=opensearch)
        self._os = cast(AsyncOpenSearch, opensearch)
        # the PIT scans sort by `_id` on purpose: no deprecation warning on every scan
        warnings.filterwarnings("ignore", _ID_FIELDDATA, OpenSearchWarning)

    async def perform_request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        body: Any | None = None,
        endpoint_id: str | None = None,
        path_parts: Mapping[str, Any] | None = None,
    ) -> ApiResponse[Any]:
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        pit_open = endpoint_id == "open_point_in_time"
        if pit_open:
            path = path.removesuffix("/_pit") + _PIT
        elif endpoint_id == "close_point_in_time":
            path, body = _PIT, {"pit_id": [cast(Mapping[str, Any], body)["id"]]}
        elif isinstance(body, dict) and "sort" in body and "pit" in body:
            sort = [{_SORT_FOR.get(f, f): o for f, o in key.items()} for key in body["sort"]]
            body = body | {"sort": sort}
        elif isinstance(body, list | tuple):  # the lines of an NDJSON body
            body = b"".join(orjson.dumps(line) + b"\n" for line in body)
        try:
            answer = await self._os.transport.perform_request(
                method, path, params=query, body=body, headers=headers
            )
        except OsConnectionTimeout as exc:  # opensearch-py's errors as the Elasticsearch client's
            raise EsConnectionTimeout(str(exc)) from exc
        except OsConnectionError as exc:
            raise EsConnectionError(str(exc)) from exc
        except OsTransportError as exc:
            status = exc.status_code if isinstance(exc.status_code, int) else 0
            error = exc.info if isinstance(exc.info, dict) else {"error": str(exc.error)}
            ignored = self._ignore_status
            if isinstance(ignored, Sequence) and status in ignored:  # as `options()` asked
                return ObjectApiResponse(error, _meta(status))
            raise HTTP_EXCEPTIONS.get(status, ApiError)(
                str(exc.error), _meta(status), error
            ) from exc
        if method == "HEAD":
            return HeadApiResponse(_meta(200 if answer else 404))
        return ObjectApiResponse({"id": answer["pit_id"]} if pit_open else answer, _meta(200))


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_param(v) for v in value)
    return str(value)
