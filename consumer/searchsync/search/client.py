"""The one builder of the search engine's client: Elasticsearch's own, or `OpenSearchClient` for
``[search] engine = opensearch``. Transport retries are off (the pipeline owns backoff);
``[elasticsearch]`` gives timeout, TLS and credentials (docs/security.md).

opensearch-py is the ``searchsync[opensearch]`` extra: it is imported only when the engine is
OpenSearch, so an Elasticsearch install runs without it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from elasticsearch import AsyncElasticsearch, AuthenticationException, AuthorizationException
from elasticsearch.serializer import OrjsonSerializer

from searchsync.config import Settings
from searchsync.errors import ConfigError

if TYPE_CHECKING:
    from searchsync.search.opensearch import OpenSearchClient

OPENSEARCH_EXTRA: Final = "pip install 'searchsync[opensearch]'"


def opensearch_client_class() -> type[OpenSearchClient]:
    """`OpenSearchClient`, importing opensearch-py; a `ConfigError` naming the extra without it."""
    try:
        from searchsync.search.opensearch import OpenSearchClient
    except ImportError as exc:
        raise ConfigError(
            "search.engine",
            f"'elasticsearch', or 'opensearch' with its extra installed: {OPENSEARCH_EXTRA}"
            f" ({exc})",
            "opensearch",
        ) from exc
    return OpenSearchClient


def make_es_client(settings: Settings) -> AsyncElasticsearch:
    """An async client for ``settings.elasticsearch`` on the configured engine; the caller closes
    it."""
    es = settings.elasticsearch
    options: dict[str, Any] = {}
    if es.ca_certs is not None:
        options["ca_certs"] = es.ca_certs
    if not es.verify_certs:
        options["verify_certs"] = False
    if settings.search.engine == "opensearch":  # basic auth only
        if es.username is not None and es.password is not None:
            options["http_auth"] = (es.username, es.password.reveal())
        if any(host.startswith("https://") for host in es.hosts):
            options["use_ssl"] = True
        return opensearch_client_class()(es.hosts, request_timeout=es.request_timeout_s, **options)
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
        # orjson: bulk answers are parsed on the event loop (stdlib json cost a tenth of the CPU)
        serializer=OrjsonSerializer(),
        **options,
    )


def describe_auth_error(exc: BaseException) -> str | None:
    """A message naming the settings to check when the cluster refused the credentials (401) or a
    privilege (403), also via ``__cause__``; None for other errors."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, AuthenticationException):
            return (
                "Elasticsearch refused the credentials (401 security_exception): check"
                " elasticsearch.api_key, or elasticsearch.username and elasticsearch.password"
            )
        if isinstance(cause, AuthorizationException):
            return (
                "Elasticsearch refused the request (403): the configured credentials lack a"
                f" privilege ({cause.message})"
            )
        cause = cause.__cause__
    return None
