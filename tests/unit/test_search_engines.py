"""`[search] engine`: the setting, the client it makes, and how `OpenSearchClient` bridges
OpenSearch's differences (docs/design.md, "Search engines") without a node: its transport is a
recorder here. The adapters on a real OpenSearch node: tests/integration/test_sink_es.py."""

from __future__ import annotations

from typing import Any

import pytest
from elastic_transport import ConnectionTimeout as EsConnectionTimeout
from elasticsearch import AsyncElasticsearch, NotFoundError
from opensearchpy import ConnectionTimeout, TransportError
from searchsync.cli.output import elasticsearch_at
from searchsync.config import load_settings
from searchsync.errors import ConfigError
from searchsync.search.client import make_es_client
from searchsync.search.opensearch import OpenSearchClient


class _Recorder:
    """opensearch-py's transport as the client uses it: one `perform_request` per call."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, str, dict[str, str], Any]] = []

    async def perform_request(
        self, method: str, url: str, params: Any = None, body: Any = None, headers: Any = None
    ) -> Any:
        self.calls.append((method, url, dict(params or {}), body))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class _Os:
    def __init__(self, transport: _Recorder) -> None:
        self.transport = transport


def _client(*answers: Any) -> tuple[OpenSearchClient, _Recorder]:
    recorder = _Recorder(*answers)
    return OpenSearchClient((), request_timeout=1, client=_Os(recorder)), recorder  # type: ignore[arg-type]


def test_the_engine_is_elasticsearch_unless_set() -> None:
    assert load_settings({}).search.engine == "elasticsearch"
    chosen = load_settings({"SEARCHSYNC_SEARCH_ENGINE": "OpenSearch"})
    assert chosen.search.engine == "opensearch"


def test_an_unknown_engine_stops_start_up_naming_the_key() -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings({"SEARCHSYNC_SEARCH_ENGINE": "solr"})
    assert caught.value.key == "search.engine"
    assert "elasticsearch, opensearch" in str(caught.value)


def test_an_api_key_is_refused_on_opensearch() -> None:
    env = {"SEARCHSYNC_SEARCH_ENGINE": "opensearch", "SEARCHSYNC_ELASTICSEARCH_API_KEY": "k"}
    with pytest.raises(ConfigError) as caught:
        load_settings(env)
    assert caught.value.key == "elasticsearch.api_key"


async def test_the_engine_setting_picks_the_client() -> None:
    es = make_es_client(load_settings({}))
    os_ = make_es_client(load_settings({"SEARCHSYNC_SEARCH_ENGINE": "opensearch"}))
    try:
        assert isinstance(es, AsyncElasticsearch)
        assert isinstance(os_, OpenSearchClient)
    finally:
        await es.close()
        await os_.close()


async def test_a_point_in_time_uses_opensearchs_api_and_sorts_by_id() -> None:
    client, sent = _client({"pit_id": "P1"}, {"pit_id": "P2", "hits": {"hits": []}}, {})
    opened = await client.open_point_in_time(index="a_v1", keep_alive="5m")
    assert opened.body == {"id": "P1"}
    await client.search(
        pit={"id": "P1", "keep_alive": "5m"},
        sort=[{"_shard_doc": "asc"}],
        seq_no_primary_term=True,
        source_includes=["tombstoned_at"],
    )
    await client.close_point_in_time(id="P2")
    assert sent.calls[0][:3] == ("POST", "/a_v1/_search/point_in_time", {"keep_alive": "5m"})
    method, url, params, body = sent.calls[1]
    assert (method, url, params) == ("POST", "/_search", {"_source_includes": "tombstoned_at"})
    assert body["sort"] == [{"_id": "asc"}] and body["seq_no_primary_term"] is True
    assert sent.calls[2] == ("DELETE", "/_search/point_in_time", {}, {"pit_id": ["P2"]})


async def test_a_sort_outside_a_point_in_time_is_sent_as_given() -> None:
    client, sent = _client({"hits": {"hits": []}})
    await client.search(index="a", body={"sort": [{"id": "asc"}], "_source": False}, size=3)
    assert sent.calls[0][3] == {"sort": [{"id": "asc"}], "_source": False, "size": 3}


async def test_bulk_sends_the_encoded_body_unchanged_with_lower_case_flags() -> None:
    client, sent = _client({"items": []})
    await client.bulk(operations=b'{"index":{}}\n{}\n', require_alias=True, filter_path="items")
    assert sent.calls[0] == (
        "PUT",
        "/_bulk",
        {"require_alias": "true", "filter_path": "items"},
        b'{"index":{}}\n{}\n',
    )


async def test_errors_are_the_elasticsearch_clients() -> None:
    missing = TransportError(404, "index_not_found_exception", {"error": {"type": "x"}})
    client, _ = _client(missing, ConnectionTimeout("N/A", "timed out", None), False)
    with pytest.raises(NotFoundError) as caught:
        await client.indices.get(index="nope")
    assert caught.value.meta.status == 404 and caught.value.body == {"error": {"type": "x"}}
    with pytest.raises(EsConnectionTimeout):
        await client.indices.refresh(index="a")
    gone = await client.indices.exists(index="nope")  # a HEAD's 404 is an answer
    assert not gone and gone.meta.status == 404


async def test_an_ignored_status_is_the_answer() -> None:
    client, _ = _client(TransportError(404, "index_not_found_exception", {"error": "gone"}))
    found = await client.options(ignore_status=404).search(index="a", size=1)
    assert found.meta.status == 404 and found.get("hits") is None


def test_an_unreachable_opensearch_is_named_so() -> None:
    settings = load_settings({"SEARCHSYNC_SEARCH_ENGINE": "opensearch"})
    assert elasticsearch_at(settings).startswith("OpenSearch at http://127.0.0.1:9200")
    assert elasticsearch_at(load_settings({})).startswith("Elasticsearch at")
