"""The seeded subset of the fault suite that `make test` runs: two short schedules of the
cheapest faults (no service restart), and one that publishes through `searchsync relay`, against
the stack the tests are given. Each must pass the independent checker: divergent = 0,
resurrected = 0, every hostile message dead-lettered with its reason, every consumed offset
accounted for; the relay schedule also every outbox row PUBLISHED."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.runner import run_schedule
from tests.faults.schedule import RELAY_FAULTS, Fault, make_schedule
from tests.faults.services import Stack

pytestmark = [pytest.mark.integration]

CHEAP = frozenset(
    {
        Fault.KILL9,
        Fault.KILL9_MID_REVOKE,
        Fault.SIGTERM,
        Fault.ADD_MEMBER,
        Fault.ES_429,
        Fault.ES_WRITE_BLOCK,
        Fault.MYSQL_KILL,
        Fault.REPLAY_SAMPLE,
        Fault.HOSTILE,
    }
)
SUBSET_SEEDS = (22, 15)  # hostile, replay, kill -9, KILL CONNECTION; mid-revoke kill, write block
RELAY_SEED = 73  # a member's kill -9, a relay's kill -9 mid-claim, a relay stalled past the timeout


def subset(seed: int):  # type: ignore[no-untyped-def]
    return make_schedule(seed, faults=CHEAP, max_steps=4, window=(8.0, 12.0))


def relay_subset(seed: int):  # type: ignore[no-untyped-def]
    return make_schedule(seed, faults=CHEAP | RELAY_FAULTS, max_steps=4, window=(8.0, 12.0))


def test_the_relay_schedule_kills_a_relay_mid_claim_and_stalls_one() -> None:
    schedule = relay_subset(RELAY_SEED)
    assert schedule.publisher == "relay"
    drawn = {step.fault for step in schedule.steps}
    assert {Fault.RELAY_KILL9_MID_CLAIM, Fault.RELAY_STALL} <= drawn, drawn


def test_the_subset_covers_a_kill_9_and_a_hostile_batch() -> None:
    drawn = {step.fault for seed in SUBSET_SEEDS for step in subset(seed).steps}
    assert {Fault.KILL9, Fault.HOSTILE} <= drawn, drawn


@pytest.mark.parametrize("seed", SUBSET_SEEDS)
async def test_a_seeded_schedule_converges_with_every_offset_accounted_for(
    seed: int, tmp_path: Path
) -> None:
    result = await run_schedule(subset(seed), Stack.from_env(), tmp_path)
    print(result.line)
    assert result.ok, f"{result.line}\nsteps: {result.steps}\nlogs kept in {result.log_dir}"
    assert result.divergent == 0 and result.resurrected == 0
    assert result.accounted == result.consumed > 0
    assert result.dead_lettered_ok == result.hostile


async def test_a_relay_schedule_converges_with_every_outbox_row_published(tmp_path: Path) -> None:
    result = await run_schedule(relay_subset(RELAY_SEED), Stack.from_env(), tmp_path)
    print(result.line)
    assert result.ok, f"{result.line}\nsteps: {result.steps}\nlogs kept in {result.log_dir}"
    assert result.divergent == 0 and result.resurrected == 0
    assert result.accounted == result.consumed > 0
    assert result.relay["published"] == result.relay["rows"] > 0
