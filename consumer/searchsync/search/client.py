"""The one place that builds the search engine's client: the consumer, the CLI and the tools
share it. ``[search] engine`` picks the engine: Elasticsearch's own client, or for OpenSearch
`OpenSearchClient`, which takes the same calls and raises the same errors (so every adapter
serves both; docs/design.md, "Search engines").

The transport's own retries are off (``max_retries=0``): the pipeline owns backoff and must see
every 429 or 503; the one-shot operator commands report a failure at once (exit code 1).

`request_timeout_s` (``[elasticsearch] request_timeout_s``, default 30 s) bounds each request.
TLS and authentication come from the same section (docs/security.md): `ca_certs` (a PEM bundle
that verifies an ``https://`` node), `verify_certs`, and either `api_key` or `username` plus
`password` (HTTP basic auth). A refused credential is a 401 (`describe_auth_error` words it).
"""

from __future__ import annotations

from typing import Any, cast

from elasticsearch import AsyncElasticsearch, AuthenticationException, AuthorizationException
from elasticsearch.serializer import OrjsonSerializer

from searchsync.config import Settings
from searchsync.search.opensearch import OpenSearchClient


def make_es_client(settings: Settings) -> AsyncElasticsearch:
    """An async client for ``settings.elasticsearch`` on the engine of ``settings.search``;
    the caller closes it."""
    es = settings.elasticsearch
    options: dict[str, Any] = {}
    if es.ca_certs is not None:
        options["ca_certs"] = es.ca_certs
    if not es.verify_certs:
        options["verify_certs"] = False
    if settings.search.engine == "opensearch":
        return _opensearch(settings, options)
    if es.api_key is not None:
        options["api_key"] = es.api_key.reveal()
    if es.username is not None and es.password is not None:
        options["basic_auth"] = (es.username, es.password.reveal())
    return AsyncElasticsearch(
        list(es.hosts),
        request_timeout=es.request_timeout_s,
        max_retries=0,
        retry_on_timeout=False,
        retry_on_status=(),
        # orjson both ways: bulk responses are parsed on the event loop, and the stdlib json
        # parser was a tenth of the consumer's CPU (request bodies are bytes lines already)
        serializer=OrjsonSerializer(),
        **options,
    )


def _opensearch(settings: Settings, options: dict[str, Any]) -> AsyncElasticsearch:
    """`OpenSearchClient`, typed as the client whose calls it takes (api_key is refused by
    the settings: OpenSearch's security plugin takes basic auth)."""
    es = settings.elasticsearch
    if es.username is not None and es.password is not None:
        options["http_auth"] = (es.username, es.password.reveal())
    if any(host.startswith("https://") for host in es.hosts):
        options["use_ssl"] = True
    client = OpenSearchClient(es.hosts, request_timeout=es.request_timeout_s, **options)
    return cast(AsyncElasticsearch, client)


def describe_auth_error(exc: BaseException) -> str | None:
    """A message naming the settings to check when Elasticsearch refused the credentials (401)
    or their privileges (403), also when `exc` was raised from such a refusal (the index admin
    translates the client's errors); None for any other error."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        message = _auth_message(cause)
        if message is not None:
            return message
        cause = cause.__cause__
    return None


def _auth_message(exc: BaseException) -> str | None:
    if isinstance(exc, AuthenticationException):
        return (
            "Elasticsearch refused the credentials (401 security_exception): check"
            " elasticsearch.api_key, or elasticsearch.username and elasticsearch.password"
        )
    if isinstance(exc, AuthorizationException):
        return (
            "Elasticsearch refused the request (403): the configured credentials lack a"
            f" privilege ({exc.message})"
        )
    return None
