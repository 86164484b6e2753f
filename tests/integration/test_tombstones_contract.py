"""The tombstone contract (tests/contract; there against the fake, in
tests/unit/test_tombstones_contract.py) through `EsIndex` on both real engines
(tests/integration/engines.py).

Every case makes its own uuid-prefixed indices, deleted afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.search.es_index import EsIndex

from tests.contract.tombstones_contract import MAPPING, TOMBSTONE_CASES, TombstoneBackend
from tests.integration.conftest import ES_URL
from tests.integration.engines import ENGINES, engine_client

pytestmark = pytest.mark.integration


class EsTombstoneBackend:
    def __init__(self, client: AsyncElasticsearch) -> None:
        self.client = client
        self.store = EsIndex(client, require_alias=False)
        self.prefix = f"searchsync_test_{uuid.uuid4().hex[:12]}"
        self.made: list[str] = []

    async def new_index(self, *, tombstoned_at: bool = True) -> str:
        name = f"{self.prefix}_{len(self.made) + 1}_v1"
        properties = dict(MAPPING["properties"])
        if not tombstoned_at:
            del properties["tombstoned_at"]
        await self.client.indices.create(
            index=name,
            settings={"number_of_shards": 1, "number_of_replicas": 0},
            mappings={**MAPPING, "properties": properties},
        )
        self.made.append(name)
        return name

    async def put(self, index: str, doc_id: str, body: dict[str, Any]) -> None:
        await self.client.index(index=index, id=doc_id, document=body, refresh=True)

    async def ids(self, index: str) -> list[str]:
        await self.client.indices.refresh(index=index)
        found = await self.client.search(index=index, size=100, source=False)
        return sorted(hit["_id"] for hit in found["hits"]["hits"])


@pytest.fixture(params=ENGINES)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[EsTombstoneBackend]:
    client = engine_client(request.param, ES_URL)
    real = EsTombstoneBackend(client)
    try:
        yield real
    finally:
        if real.made:
            await client.indices.delete(index=",".join(real.made))
        await client.close()


@pytest.mark.parametrize("case", TOMBSTONE_CASES, ids=lambda case: case.__name__)
async def test_tombstone_contract(
    case: Callable[[TombstoneBackend], Awaitable[None]], backend: EsTombstoneBackend
) -> None:
    await case(backend)
