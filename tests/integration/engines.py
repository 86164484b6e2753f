"""The two real search engines: the search contract suites and the OpenSearch end-to-end tests
run on both. Elasticsearch is the stack's (port 9200); OpenSearch is the one `make test` starts
beside it (`WITH_OPENSEARCH=1`, $TEST_OS_URL or http://127.0.0.1:9201).
"""

from __future__ import annotations

import os
import socket
from typing import Final
from urllib.parse import urlsplit

import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.search.opensearch import OpenSearchClient

OS_URL: Final = os.environ.get("TEST_OS_URL", "http://127.0.0.1:9201")
ENGINES: Final = ("elasticsearch", "opensearch")


def engine_client(engine: str, es_url: str) -> AsyncElasticsearch:
    """A client of `engine` (Elasticsearch at `es_url`, OpenSearch at `OS_URL`); close it."""
    if engine == "opensearch":
        require_opensearch()
        return OpenSearchClient([OS_URL], request_timeout=30)
    return AsyncElasticsearch(es_url, request_timeout=30)


def opensearch_env() -> dict[str, str]:
    """The settings' environment of a searchsync process on the test OpenSearch."""
    require_opensearch()
    return {"SEARCHSYNC_SEARCH_ENGINE": "opensearch", "SEARCHSYNC_ELASTICSEARCH_HOSTS": OS_URL}


def require_opensearch() -> None:
    """Fail (never skip) with what to run when the test OpenSearch does not answer."""
    parts = urlsplit(OS_URL)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 9201), timeout=2):
            return
    except OSError:
        pytest.fail(
            f"OpenSearch is not running at {OS_URL}: run `WITH_OPENSEARCH=1 make up`",
            pytrace=False,
        )
