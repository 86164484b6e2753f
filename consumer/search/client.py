"""The one place that builds the Elasticsearch client: the consumer, the CLI and the tools share it.

The transport's own retries are off (``max_retries=0``, no retry on timeout or on status). The
consumer's `RetryPolicy` owns backoff: a second, hidden retry loop inside the client would multiply
the attempts, stretch a bulk request far past `request_timeout_s`, and hide a 429 or a 503 that the
pipeline must see to pause intake. The operator commands are one-shot and idempotent (`index init`
twice is harmless), so for them a failure is reported at once (exit code 1) and the operator, or the
script, runs the command again.

`request_timeout_s` (``[elasticsearch] request_timeout_s``, default 30 s) bounds each request.
"""

from __future__ import annotations

from elasticsearch import AsyncElasticsearch
from elasticsearch.serializer import OrjsonSerializer

from consumer.config import Settings


def make_es_client(settings: Settings) -> AsyncElasticsearch:
    """An async client for ``settings.elasticsearch``; the caller closes it."""
    es = settings.elasticsearch
    return AsyncElasticsearch(
        list(es.hosts),
        request_timeout=es.request_timeout_s,
        max_retries=0,
        retry_on_timeout=False,
        retry_on_status=(),
        # orjson both ways: bulk responses are parsed on the event loop, and the stdlib json
        # parser was a tenth of the consumer's CPU (request bodies are bytes lines already)
        serializer=OrjsonSerializer(),
    )
