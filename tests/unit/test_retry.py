"""Backoff stays within its bounds, grows up to its cap and ends in the DLQ."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from searchsync.clock import Deadline
from searchsync.stream.retry import RetryPolicy


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _policy(
    base: float = 1.0,
    cap: float = 1800.0,
    attempts: int = 8,
    jitter: float = 0.2,
    seed: int = 7,
) -> RetryPolicy:
    return RetryPolicy(
        base_delay=base,
        max_delay=cap,
        max_attempts=attempts,
        jitter=jitter,
        rng=random.Random(seed),
    )


policies = st.builds(
    _policy,
    base=st.floats(min_value=0, max_value=100, allow_nan=False),
    cap=st.floats(min_value=100, max_value=10_000, allow_nan=False),
    attempts=st.integers(min_value=1, max_value=50),
    jitter=st.floats(min_value=0, max_value=1, allow_nan=False),
    seed=st.integers(min_value=0, max_value=2**32),
)


@settings(max_examples=300)
@given(policy=policies, attempt=st.integers(min_value=1, max_value=10_000))
def test_delay_is_bounded(policy: RetryPolicy, attempt: int) -> None:
    nominal = policy.nominal(attempt)
    assert nominal == min(policy.base_delay * 2 ** min(attempt - 1, 10), policy.max_delay)
    limit = max(nominal * policy.jitter, 0.001) if policy.jitter else 0.0
    assert policy.jitter_limit(attempt) == limit
    for _ in range(5):
        delay = policy.delay(attempt)
        assert 0 <= nominal <= delay <= policy.max_delay * (1 + policy.jitter) + 0.001
        assert delay == nominal if not limit else nominal <= delay < nominal + limit


@settings(max_examples=200)
@given(policy=policies, attempt=st.integers(min_value=1, max_value=2_000))
def test_nominal_grows_monotonically_to_its_cap(policy: RetryPolicy, attempt: int) -> None:
    assert policy.nominal(attempt) <= policy.nominal(attempt + 1)
    assert policy.nominal(attempt) <= policy.max_delay


def test_exponential_shape_as_in_next_retry() -> None:
    policy = _policy(base=1.0, cap=1800.0, jitter=0.2)
    assert [policy.nominal(a) for a in range(1, 6)] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert policy.nominal(11) == policy.nominal(40) == 1024.0  # the shift stops at 10
    assert _policy(base=2.0, cap=1800.0).nominal(40) == 1800.0  # then the cap
    for attempt in range(1, 6):
        assert policy.nominal(attempt) <= policy.delay(attempt) < policy.nominal(attempt) * 1.2
    tiny = _policy(base=0.001, cap=1.0, jitter=0.2)  # the jitter's floor is 1 ms
    assert {tiny.jitter_limit(1)} == {0.001} and 0.001 <= tiny.delay(1) < 0.002


def test_jitter_spreads_retries_even_at_the_cap() -> None:
    policy = _policy(base=1.0, cap=60.0, jitter=0.5, seed=3)
    delays = {policy.delay(30) for _ in range(50)}
    assert len(delays) > 40
    assert max(delays) < 90.0  # the jitter comes on top of the cap, as in NextRetry
    assert min(delays) >= 60.0


def test_no_jitter_is_deterministic() -> None:
    policy = _policy(base=0.5, cap=10.0, jitter=0.0)
    assert [policy.delay(a) for a in (1, 2, 3, 4, 5, 6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0]


def test_same_seed_same_delays() -> None:
    a = _policy(seed=42)
    b = _policy(seed=42)
    assert [a.delay(n) for n in range(1, 10)] == [b.delay(n) for n in range(1, 10)]


def test_attempts_are_exhausted_at_the_limit() -> None:
    policy = _policy(base=2.0, jitter=0.0, attempts=3)
    assert [policy.delay(1), policy.delay(2)] == [2.0, 4.0]
    assert not policy.exhausted(2)
    assert policy.exhausted(3)
    assert policy.exhausted(4)


def test_a_single_attempt_never_retries() -> None:
    policy = _policy(attempts=1)
    assert policy.exhausted(1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": -1.0},
        {"base": 10.0, "cap": 5.0},
        {"attempts": 0},
        {"jitter": -0.1},
        {"jitter": 1.5},
        {"base": float("nan")},
    ],
)
def test_invalid_settings_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        _policy(**kwargs)  # type: ignore[arg-type]


def test_attempt_must_be_positive() -> None:
    with pytest.raises(ValueError):
        _policy().delay(0)


def test_deadline_follows_the_injected_clock() -> None:
    clock = FakeClock(10.0)
    deadline = Deadline(clock, 5.0)
    assert clock() + deadline.remaining() == 15.0  # due at 15
    assert deadline.remaining() == 5.0
    assert not deadline.expired()
    clock.now = 14.0
    assert deadline.remaining() == 1.0
    clock.now = 15.0
    assert deadline.expired()
    clock.now = 99.0
    assert deadline.remaining() == 0.0


def test_deadline_rejects_negative_spans() -> None:
    with pytest.raises(ValueError):
        Deadline(FakeClock(), -1.0)
