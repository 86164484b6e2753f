"""The search index and index admin contracts (tests/contract) against their in-memory fakes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.contract.index_admin_contract import INDEX_ADMIN_CASES
from tests.contract.search_backend import Backend, FakeBackend
from tests.contract.search_contract import SEARCH_INDEX_CASES

Case = Callable[[Backend], Awaitable[None]]


@pytest.mark.parametrize("case", SEARCH_INDEX_CASES, ids=lambda case: case.__name__)
async def test_search_index_contract_on_the_fake(case: Case) -> None:
    await case(FakeBackend())


@pytest.mark.parametrize("case", INDEX_ADMIN_CASES, ids=lambda case: case.__name__)
async def test_index_admin_contract_on_the_fake(case: Case) -> None:
    await case(FakeBackend())
