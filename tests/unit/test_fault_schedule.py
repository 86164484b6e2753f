"""The fault schedule is a pure function of its seed (tests/faults/schedule.py): a failing
schedule replays exactly from the seed it prints."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.faults.schedule import (
    ALL_FAULTS,
    NOT_IN_RELAY_SCHEDULES,
    RELAY_FAULTS,
    SERVICE_RESTARTS,
    Fault,
    make_schedule,
)

seeds = st.integers(min_value=0, max_value=2**63)
kinds = st.frozensets(st.sampled_from(sorted(Fault)), min_size=1)


@given(seeds, kinds)
def test_the_same_seed_gives_the_same_schedule(seed: int, faults: frozenset[Fault]) -> None:
    # the order the kinds are given in must not matter either
    assert make_schedule(seed, faults=faults) == make_schedule(
        seed, faults=sorted(faults, reverse=True)
    )


@given(seeds, kinds)
def test_steps_use_only_the_given_faults_and_never_overlap(
    seed: int, faults: frozenset[Fault]
) -> None:
    s = make_schedule(seed, faults=faults, window=(5.0, 12.0))
    assert 2 <= len(s.steps) <= 5 and s.members in (2, 3) and 5.0 <= s.window_s <= 12.0
    assert {step.fault for step in s.steps} <= faults
    for before, after in zip(s.steps, s.steps[1:], strict=False):
        assert after.at_s >= before.end_s
    assert all(step.duration_s >= 0 and step.at_s > 0 for step in s.steps)


def test_different_seeds_give_different_schedules() -> None:
    schedules = {make_schedule(seed) for seed in range(50)}
    assert len(schedules) == 50
    drawn = {step.fault for s in schedules for step in s.steps}
    assert drawn == set(ALL_FAULTS)  # 50 seeds draw every kind at least once
    assert drawn >= SERVICE_RESTARTS


@given(seeds, kinds)
def test_a_debezium_seed_gives_the_schedule_it_gave_before_the_relay_joined(
    seed: int, faults: frozenset[Fault]
) -> None:
    s = make_schedule(seed, faults=faults)
    if s.publisher == "debezium":
        assert s == make_schedule(seed, faults=faults - RELAY_FAULTS)
        assert not {step.fault for step in s.steps} & RELAY_FAULTS
    else:
        assert faults & RELAY_FAULTS and s.relays in (1, 2)
        assert not {step.fault for step in s.steps} & NOT_IN_RELAY_SCHEDULES


def test_a_share_of_the_seeds_publish_through_the_relay_when_relay_faults_may_be_drawn() -> None:
    relay = [seed for seed in range(300) if make_schedule(seed).publisher == "relay"]
    assert 60 <= len(relay) <= 140, len(relay)
    drawn = {step.fault for seed in relay for step in make_schedule(seed).steps}
    assert drawn >= RELAY_FAULTS
    without = ALL_FAULTS - RELAY_FAULTS
    assert all(make_schedule(seed, faults=without).publisher == "debezium" for seed in range(300))
