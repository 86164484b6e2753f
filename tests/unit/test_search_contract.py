"""The search engine's port contracts (tests/contract) against their in-memory fakes: the search
index, the index admin, the index's read ports (repair side, rebuild reader) and the read alias."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.contract.index_admin_contract import INDEX_ADMIN_CASES
from tests.contract.index_reader_contract import INDEX_READER_CASES
from tests.contract.index_side_contract import INDEX_SIDE_CASES
from tests.contract.read_alias_contract import READ_ALIAS_CASES
from tests.contract.search_backend import Backend, FakeBackend
from tests.contract.search_contract import SEARCH_INDEX_CASES

Case = Callable[[Backend], Awaitable[None]]


@pytest.mark.parametrize("case", SEARCH_INDEX_CASES, ids=lambda case: case.__name__)
async def test_search_index_contract_on_the_fake(case: Case) -> None:
    await case(FakeBackend())


@pytest.mark.parametrize("case", INDEX_ADMIN_CASES, ids=lambda case: case.__name__)
async def test_index_admin_contract_on_the_fake(case: Case) -> None:
    await case(FakeBackend())


@pytest.mark.parametrize("case", INDEX_SIDE_CASES, ids=lambda case: case.__name__)
async def test_index_side_contract_on_the_fake(
    case: Callable[[Backend], Awaitable[None]],
) -> None:
    await case(FakeBackend())


@pytest.mark.parametrize("case", INDEX_READER_CASES, ids=lambda case: case.__name__)
async def test_index_reader_contract_on_the_fake(
    case: Callable[[Backend], Awaitable[None]],
) -> None:
    await case(FakeBackend())


@pytest.mark.parametrize("case", READ_ALIAS_CASES, ids=lambda case: case.__name__)
async def test_read_alias_contract_on_the_fake(
    case: Callable[[Backend], Awaitable[None]],
) -> None:
    await case(FakeBackend())
