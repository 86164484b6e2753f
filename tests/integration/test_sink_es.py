"""The search contract and index bootstrap against both real engines: an Elasticsearch node and
an OpenSearch node (every test runs once on each).

Runs the very cases of tests/contract (there against the in-memory fakes, in
tests/unit/test_search_contract.py) through `EsIndex` and `EsIndexAdmin`, plus
what only a real node can show. Every test uses its own uuid-prefixed names and deletes its
indices afterwards.
Elasticsearch: $TEST_ES_URL or http://127.0.0.1:9200; OpenSearch:
$TEST_OS_URL or http://127.0.0.1:9201 (`make test` starts it there).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.errors import Disposition
from searchsync.projection import wiki_page
from searchsync.search.admin import InitAction, describe, init_index
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import BulkSizer, EsIndex
from searchsync.search.port import IndexAdmin, SearchEngine
from searchsync.search.sink import OutcomeKind, Sink

from tests.contract.index_admin_contract import INDEX_ADMIN_CASES
from tests.contract.index_reader_contract import INDEX_READER_CASES
from tests.contract.index_side_contract import INDEX_SIDE_CASES
from tests.contract.read_alias_contract import READ_ALIAS_CASES
from tests.contract.search_backend import Backend, Names, new_alias, op
from tests.contract.search_contract import SEARCH_INDEX_CASES
from tests.integration.engines import ENGINES, engine_client

pytestmark = pytest.mark.integration

ES_URL = os.environ.get("TEST_ES_URL", "http://127.0.0.1:9200")


@pytest.fixture(params=ENGINES)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[AsyncElasticsearch]:
    es = engine_client(request.param, ES_URL)
    try:
        yield es
    finally:
        await es.close()


@pytest.fixture
async def prefix(client: AsyncElasticsearch) -> AsyncIterator[str]:
    """A unique name prefix; every index starting with it is deleted afterwards."""
    name = f"searchsync_test_{uuid.uuid4().hex[:12]}"
    try:
        yield name
    finally:
        # Resolve the wildcard first: action.destructive_requires_name (default true) refuses
        # a wildcard delete.
        found = await client.indices.get(index=f"{name}*", expand_wildcards="all")
        if found.body:
            await client.indices.delete(index=",".join(found.body))


class EsBackend:
    def __init__(self, client: AsyncElasticsearch, prefix: str) -> None:
        self.client = client
        self.index: SearchEngine = EsIndex(client)
        self.admin: IndexAdmin = EsIndexAdmin(client)
        self.fresh_alias = Names(prefix)

    async def stored(self, alias: str, doc_id: str) -> tuple[int, dict[str, Any]] | None:
        try:
            response = await self.client.get(index=alias, id=doc_id, realtime=True)
        except NotFoundError:
            return None
        return int(response["_version"]), dict(response["_source"])


@pytest.mark.parametrize("case", SEARCH_INDEX_CASES, ids=lambda case: case.__name__)
async def test_search_index_contract(
    case: Callable[[Backend], Awaitable[None]], client: AsyncElasticsearch, prefix: str
) -> None:
    await case(EsBackend(client, prefix))


@pytest.mark.parametrize("case", INDEX_ADMIN_CASES, ids=lambda case: case.__name__)
async def test_index_admin_contract(
    case: Callable[[Backend], Awaitable[None]], client: AsyncElasticsearch, prefix: str
) -> None:
    await case(EsBackend(client, prefix))


@pytest.mark.parametrize("case", INDEX_SIDE_CASES, ids=lambda case: case.__name__)
async def test_index_side_contract(
    case: Callable[[Backend], Awaitable[None]], client: AsyncElasticsearch, prefix: str
) -> None:
    await case(EsBackend(client, prefix))


@pytest.mark.parametrize("case", INDEX_READER_CASES, ids=lambda case: case.__name__)
async def test_index_reader_contract(
    case: Callable[[Backend], Awaitable[None]], client: AsyncElasticsearch, prefix: str
) -> None:
    await case(EsBackend(client, prefix))


@pytest.mark.parametrize("case", READ_ALIAS_CASES, ids=lambda case: case.__name__)
async def test_read_alias_contract(
    case: Callable[[Backend], Awaitable[None]], client: AsyncElasticsearch, prefix: str
) -> None:
    await case(EsBackend(client, prefix))


async def test_init_index_creates_the_packaged_mapping_and_settings(
    client: AsyncElasticsearch, prefix: str
) -> None:
    alias = f"{prefix}_wiki_page"
    result = await init_index(client, alias, wiki_page.load_mapping(), schema_version=5)
    assert (result.action, result.index) == (InitAction.CREATED, f"{alias}_v1")
    stored = await client.indices.get_mapping(index=alias)
    mappings = stored[f"{alias}_v1"]["mappings"]
    assert mappings["dynamic"] == "strict"
    assert mappings["_meta"]["projection_schema_version"] == 5
    settings = await client.indices.get_settings(index=alias)
    assert settings[f"{alias}_v1"]["settings"]["index"]["number_of_replicas"] == "0"
    writer = await EsIndexAdmin(client).write_index(alias)
    assert writer is not None and writer.schema_version == 5
    assert (await describe(client, alias)).write_index == f"{alias}_v1"
    again = await init_index(client, alias, wiki_page.load_mapping(), schema_version=5)
    assert (again.action, again.index) == (InitAction.EXISTS, f"{alias}_v1")


async def test_a_full_bulk_over_several_chunks(client: AsyncElasticsearch, prefix: str) -> None:
    backend = EsBackend(client, prefix)
    alias = await new_alias(backend)
    sink = Sink(EsIndex(client, sizer=BulkSizer(max_actions=7, max_bytes=4096)))
    ops = [op(alias, f"p{i}", i + 1) for i in range(40)]
    outcomes = await sink.write(ops)
    assert all(o.kind is OutcomeKind.APPLIED for o in outcomes)
    again = await sink.write(ops)
    assert all(o.kind is OutcomeKind.ALREADY_APPLIED for o in again)
    await backend.index.refresh(alias)
    count = await client.count(index=alias)
    assert count["count"] == 40


@pytest.mark.parametrize(
    "block", ["index.blocks.read_only_allow_delete", "index.blocks.write"], ids=["flood", "write"]
)
async def test_an_index_block_is_retry_not_poison(
    client: AsyncElasticsearch, prefix: str, block: str
) -> None:
    """Disk flood stage (429) and a write block (403) are the cluster's problem, not the event's."""
    backend = EsBackend(client, prefix)
    alias = await new_alias(backend)
    await client.indices.put_settings(index=alias, settings={block: True})
    try:
        [outcome] = await Sink(EsIndex(client)).write([op(alias, "p1", 1)])
    finally:
        await client.indices.put_settings(index=alias, settings={block: None})
    assert (outcome.kind, outcome.code) == (OutcomeKind.FAILED, "ES_BLOCKED")
    assert outcome.code is not None and outcome.code.disposition is Disposition.SYSTEMIC
    assert await backend.stored(alias, "p1") is None
