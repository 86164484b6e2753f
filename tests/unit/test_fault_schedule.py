"""The fault schedule is a pure function of its seed (tests/faults/schedule.py): a failing
schedule replays exactly from the seed it prints."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from tests.faults.schedule import (
    ALL_FAULTS,
    FANOUT_SHARE,
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
    alone = s.publisher == "debezium" and faults - RELAY_FAULTS == {Fault.FANOUT_FREEZE}
    assert (1 if alone else 2) <= len(s.steps) <= 5
    assert s.members in (2, 3) and 5.0 <= s.window_s <= 12.0
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


FREEZE = Fault.FANOUT_FREEZE


@given(seeds, kinds)
def test_a_seed_keeps_its_steps_when_the_fanout_freeze_joins_but_one_taken_by_it(
    seed: int, faults: frozenset[Fault]
) -> None:
    assume(faults - {FREEZE})
    with_it = make_schedule(seed, faults=faults | {FREEZE})
    without = make_schedule(seed, faults=faults - {FREEZE})
    assert (with_it.members, with_it.window_s, with_it.relays, with_it.workload_seed) == (
        without.members,
        without.window_s,
        without.relays,
        without.workload_seed,
    )
    assert [s.at_s for s in with_it.steps] == [s.at_s for s in without.steps]
    changed = [(a, b) for a, b in zip(with_it.steps, without.steps, strict=True) if a != b]
    assert len(changed) <= 1  # at most one step, turned into the freeze
    assert all(a.fault is FREEZE for a, _ in changed)
    assert [s.fault for s in with_it.steps].count(FREEZE) <= 1


def test_the_fanout_freeze_is_drawn_in_about_a_quarter_of_the_schedules() -> None:
    frozen = [s for s in range(400) if FREEZE in {st.fault for st in make_schedule(s).steps}]
    assert 60 <= len(frozen) <= 140, len(frozen)  # 1 in 4 of every schedule
    assert all(make_schedule(s).publisher == "debezium" for s in frozen)  # never with a relay
    assert frozen == [  # the same seeds on a second draw: a pure function of the seed
        s for s in range(400) if FREEZE in {st.fault for st in make_schedule(s).steps}
    ]
    given_kinds = frozenset({FREEZE, Fault.KILL9})  # `--faults fanout_freeze,kill9`
    drawn = [
        s
        for s in range(400)
        if FREEZE in {st.fault for st in make_schedule(s, faults=given_kinds).steps}
    ]
    assert abs(len(drawn) / 400 - FANOUT_SHARE) < 0.08, len(drawn)


def test_the_fanout_freeze_alone_is_a_schedule_of_one_step() -> None:
    for seed in range(20):
        s = make_schedule(seed, faults={FREEZE})
        assert [st.fault for st in s.steps] == [FREEZE] and s.publisher == "debezium"
        assert s == make_schedule(seed, faults={FREEZE})
