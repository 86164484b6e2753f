"""The adaptive chunk controller: bounds, direction and monotonicity (Hypothesis)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.ops.chunks import ChunkController

latency = st.floats(min_value=1e-6, max_value=1e4, allow_nan=False, allow_infinity=False)


@st.composite
def controllers(draw: st.DrawFn, quantum: bool = True) -> ChunkController:
    lo = draw(st.integers(1, 10_000))
    hi = draw(st.integers(lo, 100_000))
    return ChunkController(
        minimum=lo,
        maximum=hi,
        target_s=draw(latency),
        current=draw(st.integers(lo, hi)),
        max_step=draw(st.floats(1.01, 10.0)),
        quantum=draw(st.sampled_from([1, 7, 500]) if quantum else st.just(1)),
    )


def proposal(c: ChunkController, actual_s: float) -> int:
    """The size `c.observe(actual_s)` moves to, `c` left as it is."""
    return replace(c).observe(actual_s)


@given(controllers(), st.lists(st.one_of(latency, st.just(0.0)), max_size=30))
def test_the_size_stays_within_its_bounds(c: ChunkController, latencies: list[float]) -> None:
    for actual in latencies:
        size = c.observe(actual)
        assert c.minimum <= size <= c.maximum


@given(controllers(), latency)
def test_the_size_moves_toward_the_target(c: ChunkController, actual: float) -> None:
    before = c.current
    after = c.observe(actual)
    if actual > c.target_s:  # too slow: never grow
        assert after <= before
    elif actual < c.target_s:  # too fast: never shrink
        assert after >= before
    # one step changes the size by at most the step factor (plus rounding), unless clipped
    assert after <= max(c.minimum, before * c.max_step + 1)
    assert after >= min(c.maximum, before / c.max_step - 1)


@given(controllers(), latency, latency)
def test_the_next_size_is_monotone_in_the_ratio(c: ChunkController, a: float, b: float) -> None:
    faster, slower = min(a, b), max(a, b)
    assert proposal(c, faster) >= proposal(c, slower)


@given(controllers(quantum=False))
def test_the_formula_inside_the_bounds(c: ChunkController) -> None:
    c.current = c.minimum
    # half the target latency: twice the size (within the step limit and the bounds)
    want = min(c.maximum, round(c.current * min(2.0, c.max_step)))
    assert proposal(c, c.target_s / 2) == max(c.minimum, want)
    assert proposal(c, c.target_s) == c.current


def test_a_repeated_slow_chunk_converges_to_the_minimum() -> None:
    c = ChunkController(minimum=10, maximum=1000, target_s=0.1, current=1000)
    for _ in range(20):
        c.observe(10.0)
    assert c.current == 10


@pytest.mark.parametrize(
    "kwargs",
    [
        {"minimum": 0, "maximum": 5},
        {"minimum": 6, "maximum": 5},
        {"minimum": 1, "maximum": 5, "target_s": 0.0},
        {"minimum": 1, "maximum": 5, "max_step": 1.0},
    ],
)
def test_bad_parameters_are_refused(kwargs: dict[str, float]) -> None:
    args = {"target_s": 1.0, "current": 1, **kwargs}
    with pytest.raises(ValueError):
        ChunkController(**args)  # type: ignore[arg-type]


@given(controllers(), latency)
def test_a_new_size_of_a_quantum_or_more_is_whole_quanta(c: ChunkController, actual: float) -> None:
    before = c.current
    after = c.observe(actual)
    # the step limits exactly as the controller computes them (float floor division can differ)
    bounds = (c.minimum, c.maximum, math.floor(before * c.max_step), math.ceil(before / c.max_step))
    if after != before and after >= c.quantum and after not in bounds:
        assert after % c.quantum == 0


def test_the_backfill_grows_by_whole_bulks() -> None:
    c = ChunkController(minimum=50, maximum=5000, target_s=0.5, current=500, quantum=500)
    assert [c.observe(0.3) for _ in range(5)] == [1000, 1500, 2500, 4000, 5000]  # x1.67, nearest
    assert c.observe(0.55) == 4500  # 4545
    assert c.observe(0.8) == 3000  # 2812 rounds up
    assert c.observe(2.0) == 1500  # 750: the step limit (a factor 2) holds
    assert c.observe(0.5) == 1500
    assert ChunkController(50, 5000, 0.5, 400, quantum=500).observe(0.6) == 333  # below one bulk


def test_quantum_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ChunkController(minimum=1, maximum=10, target_s=1.0, current=5, quantum=0)


def test_the_step_limit_is_the_exact_ceiling_found_by_hypothesis() -> None:
    """In floats -(-58311 // 1.9) is 30691, one above the true ceiling: the old bound was off."""
    c = ChunkController(
        minimum=1, maximum=58311, target_s=1.0, current=58311, max_step=1.9, quantum=7
    )
    assert c.observe(2.0) == math.ceil(58311 / 1.9) == 30690
