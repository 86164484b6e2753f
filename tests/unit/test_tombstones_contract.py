"""The tombstone contract (tests/contract) against the `SearchEngine` fake."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.contract.tombstones_contract import MAPPING, TOMBSTONE_CASES, TombstoneBackend
from tests.fakes.search_index import InMemoryIndex


class FakeTombstoneBackend:
    def __init__(self) -> None:
        self.store = InMemoryIndex()
        self._names = itertools.count(1)

    async def new_index(self, *, tombstoned_at: bool = True) -> str:
        name = f"contract_{next(self._names)}_v1"
        fields = {
            k: v for k, v in MAPPING["properties"].items() if tombstoned_at or k != "tombstoned_at"
        }
        self.store.given_index(name, {"mappings": {**MAPPING, "properties": fields}})
        return name

    async def put(self, index: str, doc_id: str, body: dict[str, Any]) -> None:
        self.store.put(index, doc_id, body)

    async def ids(self, index: str) -> list[str]:
        return sorted(self.store.indices[index].docs)


@pytest.mark.parametrize("case", TOMBSTONE_CASES, ids=lambda case: case.__name__)
async def test_tombstone_contract_on_the_fake(
    case: Callable[[TombstoneBackend], Awaitable[None]],
) -> None:
    await case(FakeTombstoneBackend())
