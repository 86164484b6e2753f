"""The MySQL-side port contracts (tests/contract) against their fakes (tests/fakes)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.contract.fanout_contract import FANOUT_CASES, FakeFanoutWorld
from tests.contract.gap_acks_contract import GAP_ACKS_CASES, FakeGapAcksWorld
from tests.contract.lineage_lease_contract import (
    LEASE_CASES,
    LINEAGE_CASES,
    FakeLeaseWorld,
    FakeLineageWorld,
)
from tests.contract.outbox_contract import OUTBOX_CASES, FakeOutboxWorld
from tests.contract.projection_state_contract import (
    PROJECTION_STATE_CASES,
    FakeProjectionStateWorld,
)
from tests.contract.rebuild_state_contract import REBUILD_STATE_CASES, FakeRebuildStateWorld
from tests.contract.replay_ledger_contract import REPLAY_LEDGER_CASES, FakeReplayLedgerWorld
from tests.contract.truth_contract import TRUTH_CASES, FakeTruthWorld
from tests.contract.truth_relations_contract import RELATIONS_CASES, FakeRelationsWorld
from tests.contract.wheel_state_contract import WHEEL_STATE_CASES, FakeWheelStateWorld

AsyncCase = Callable[[Any], Awaitable[None]]
WORLDS: list[tuple[AsyncCase, Callable[[], Any]]] = [
    *((case, FakeTruthWorld) for case in TRUTH_CASES),
    *((case, FakeRelationsWorld) for case in RELATIONS_CASES),
    *((case, FakeOutboxWorld) for case in OUTBOX_CASES),
    *((case, FakeProjectionStateWorld) for case in PROJECTION_STATE_CASES),
    *((case, FakeRebuildStateWorld) for case in REBUILD_STATE_CASES),
    *((case, FakeWheelStateWorld) for case in WHEEL_STATE_CASES),
    *((case, FakeGapAcksWorld) for case in GAP_ACKS_CASES),
    *((case, FakeFanoutWorld) for case in FANOUT_CASES),
    *((case, FakeLineageWorld) for case in LINEAGE_CASES),
    *((case, FakeLeaseWorld) for case in LEASE_CASES),
]


@pytest.mark.parametrize(("case", "world"), WORLDS, ids=lambda x: getattr(x, "__name__", ""))
async def test_contract_on_the_fake(case: AsyncCase, world: Callable[[], Any]) -> None:
    await case(world())


@pytest.mark.parametrize("case", REPLAY_LEDGER_CASES, ids=lambda case: case.__name__)
def test_replay_ledger_contract_on_the_fake(case: Callable[[Any], None]) -> None:
    case(FakeReplayLedgerWorld())
