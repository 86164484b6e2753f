"""The sink contract and index bootstrap against a real Elasticsearch node.

Runs the very `CONTRACT` cases of tests/unit/test_sink.py (there against the in-memory fake)
through `EsIndex`, plus `init_index`/`describe`. Every test uses its own uuid-suffixed alias
and deletes its indices afterwards. ES URL: $SEARCHSYNC_TEST_ES_URL or http://127.0.0.1:9200.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch, NotFoundError

from consumer.errors import ConfigError
from consumer.projection import wiki_page
from consumer.search.admin import InitAction, describe, init_index
from consumer.search.sink import BulkSizer, EsIndex, OutcomeKind, SearchIndex, Sink

pytestmark = pytest.mark.integration

ES_URL = os.environ.get("SEARCHSYNC_TEST_ES_URL", "http://127.0.0.1:9200")


def _load_contract() -> ModuleType:
    """Import tests/unit/test_sink.py by path (the test tree is not a package)."""
    path = Path(__file__).resolve().parents[1] / "unit" / "test_sink.py"
    spec = importlib.util.spec_from_file_location("searchsync_sink_contract", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


contract = _load_contract()


@pytest.fixture
async def client() -> AsyncIterator[AsyncElasticsearch]:
    es = AsyncElasticsearch(ES_URL, request_timeout=30)
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


class EsHarness:
    def __init__(self, client: AsyncElasticsearch, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.index: SearchIndex = EsIndex(client)
        self._count = 0

    async def new_alias(self) -> str:
        self._count += 1
        alias = f"{self.prefix}_wiki_page_{self._count}"
        result = await init_index(self.client, alias, wiki_page.load_mapping())
        assert result.action is InitAction.CREATED
        return alias

    def physical(self, alias: str) -> str:
        return f"{alias}_v1"

    async def stored(self, alias: str, doc_id: str) -> tuple[int, dict[str, Any]] | None:
        try:
            response = await self.client.get(index=alias, id=doc_id, realtime=True)
        except NotFoundError:
            return None
        return int(response["_version"]), dict(response["_source"])

    async def exists(self, name: str) -> bool:
        return bool(await self.client.indices.exists(index=name))


@pytest.mark.parametrize("case", contract.CONTRACT, ids=lambda case: case.__name__)
async def test_contract_on_elasticsearch(
    case: Callable[[Any], Awaitable[None]], client: AsyncElasticsearch, prefix: str
) -> None:
    await case(EsHarness(client, prefix))


async def test_init_index_is_idempotent_and_describe_reports_the_write_index(
    client: AsyncElasticsearch, prefix: str
) -> None:
    alias = f"{prefix}_wiki_page"
    mapping = wiki_page.load_mapping()
    dry = await init_index(client, alias, mapping, dry_run=True)
    assert (dry.action, dry.index) == (InitAction.WOULD_CREATE, f"{alias}_v1")
    assert not (await describe(client, alias)).exists
    first = await init_index(client, alias, mapping)
    second = await init_index(client, alias, mapping)
    assert (first.action, first.index) == (InitAction.CREATED, f"{alias}_v1")
    assert (second.action, second.index) == (InitAction.EXISTS, f"{alias}_v1")
    description = await describe(client, alias)
    assert description.exists and description.indices == (f"{alias}_v1",)
    assert description.write_index == f"{alias}_v1"
    stored = await client.indices.get_mapping(index=alias)
    assert stored[f"{alias}_v1"]["mappings"]["dynamic"] == "strict"
    settings = await client.indices.get_settings(index=alias)
    assert settings[f"{alias}_v1"]["settings"]["index"]["number_of_replicas"] == "0"


async def test_init_index_adds_the_alias_to_an_orphan_v1(
    client: AsyncElasticsearch, prefix: str
) -> None:
    alias = f"{prefix}_wiki_page"
    mapping = wiki_page.load_mapping()
    await client.indices.create(index=f"{alias}_v1", mappings=mapping["mappings"])
    dry = await init_index(client, alias, mapping, dry_run=True)
    assert dry.action is InitAction.WOULD_ADD_ALIAS
    result = await init_index(client, alias, mapping)
    assert result.action is InitAction.ALIAS_ADDED
    assert (await describe(client, alias)).write_index == f"{alias}_v1"


async def test_init_index_refuses_a_concrete_index_named_like_the_alias(
    client: AsyncElasticsearch, prefix: str
) -> None:
    alias = f"{prefix}_wiki_page"
    await client.indices.create(index=alias)
    with pytest.raises(ConfigError):
        await init_index(client, alias, wiki_page.load_mapping())


async def test_a_full_bulk_over_several_chunks(client: AsyncElasticsearch, prefix: str) -> None:
    harness = EsHarness(client, prefix)
    alias = await harness.new_alias()
    sink = Sink(EsIndex(client, sizer=BulkSizer(max_actions=7, max_bytes=4096)))
    ops = [contract.op(alias, f"p{i}", i + 1) for i in range(40)]
    outcomes = await sink.write(ops)
    assert all(o.kind is OutcomeKind.APPLIED for o in outcomes)
    again = await sink.write(ops)
    assert all(o.kind is OutcomeKind.ALREADY_APPLIED for o in again)
    await harness.index.refresh(alias)
    count = await client.count(index=alias)
    assert count["count"] == 40


@pytest.mark.parametrize(
    "block", ["index.blocks.read_only_allow_delete", "index.blocks.write"], ids=["flood", "write"]
)
async def test_an_index_block_is_retry_not_poison(
    client: AsyncElasticsearch, prefix: str, block: str
) -> None:
    """Disk flood stage (429) and a write block (403) are the cluster's problem, not the event's."""
    harness = EsHarness(client, prefix)
    alias = await harness.new_alias()
    await client.indices.put_settings(index=alias, settings={block: True})
    try:
        [outcome] = await Sink(EsIndex(client)).write([contract.op(alias, "p1", 1)])
    finally:
        await client.indices.put_settings(index=alias, settings={block: None})
    assert (outcome.kind, outcome.code) == (OutcomeKind.RETRY, "ES_BLOCKED")
    assert outcome.systemic
    assert await harness.stored(alias, "p1") is None
