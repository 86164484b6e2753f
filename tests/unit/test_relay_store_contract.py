"""The relay store contract (tests/contract) against `FakeRelayStore`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.contract.relay_store_contract import RELAY_STORE_CASES, RelayBackend
from tests.fakes.relay_store import FakeRelayStore


class FakeRelayBackend:
    def __init__(self) -> None:
        self.store = FakeRelayStore(now=1_000_000.0)

    async def add(self, aggregate_ids: list[str]) -> list[int]:
        return [self.store.add(a) for a in aggregate_ids]

    async def age(self, seconds: float) -> None:
        for r in self.store.rows.values():
            r.created_at -= seconds
            if r.locked_at is not None:
                r.locked_at -= seconds

    async def statuses(self) -> dict[int, tuple[str, int, str | None]]:
        return {i: (r.status, r.attempts, r.locked_by) for i, r in self.store.rows.items()}


@pytest.mark.parametrize("case", RELAY_STORE_CASES, ids=lambda case: case.__name__)
async def test_relay_store_contract_on_the_fake(
    case: Callable[[RelayBackend], Awaitable[None]],
) -> None:
    await case(FakeRelayBackend())
