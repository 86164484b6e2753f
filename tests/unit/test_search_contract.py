"""The search contract (tests/contract) against the in-memory fake."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.contract.search_backend import Backend, FakeBackend
from tests.contract.search_contract import CONTRACT


@pytest.mark.parametrize("case", CONTRACT, ids=lambda case: case.__name__)
async def test_contract_on_the_fake(case: Callable[[Backend], Awaitable[None]]) -> None:
    await case(FakeBackend())
