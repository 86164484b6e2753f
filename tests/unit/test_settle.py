"""`WorkState.settle`: what a work's outcome does, from the error-code table alone (docs/design.md,
"Retry")."""

from __future__ import annotations

import random

import pytest
from searchsync.errors import Disposition, ErrorCode
from searchsync.kafka.intake import RawMessage
from searchsync.search.sink import OutcomeKind
from searchsync.stream.retry import RetryPolicy
from searchsync.stream.work import Work
from searchsync.stream.work_state import (
    OUTAGE_RETRY_CAP_S,
    SYSTEMIC_RETRY_CAP_S,
    Settled,
    WorkState,
)
from searchsync.types import Operation, ThinEvent

TP = ("t", 0)


class Env:
    """One key's work in a `WorkState` whose backoff is 2**(n-1) s, no jitter."""

    def __init__(self, max_attempts: int = 3) -> None:
        self.now = 0.0
        retry = RetryPolicy(1.0, 1000.0, max_attempts, 0.0, random.Random(0))
        self.state = WorkState(max_in_flight=10, max_queued=100, retry=retry, clock=self.clock)
        self.state.assign([TP])
        event = ThinEvent("e", "wiki_page", "a", Operation.UPSERT, 1)
        self.state.admit([(RawMessage(*TP, 0, None, b"", None), event)])
        self.taken: list[Work] = []  # taken by `retried_after`, not failed yet

    def clock(self) -> float:
        return self.now

    def take(self) -> Work:
        [work] = self.taken or self.state.take(10)
        self.taken = []
        return work

    def fail(self, code: ErrorCode, *, unexpected: bool = False) -> tuple[Settled, Work]:
        work = self.take()
        work.end(OutcomeKind.FAILED, code, "why", unexpected=unexpected)
        return self.state.settle(work, []), work

    def retried_after(self, delay: float) -> bool:
        """The work comes back after `delay` seconds, not before."""
        start = self.now
        self.now = start + delay - 0.001
        self.state.release_due()
        if self.state.take(10):
            return False
        self.now = start + delay
        self.state.release_due()
        self.taken = self.state.take(10)
        return bool(self.taken)

    def wait_out(self) -> None:
        """Let a scheduled retry come due (the work is ready again, not taken)."""
        self.now += 1000.0
        self.state.release_due()


@pytest.mark.parametrize("code", list(ErrorCode))
def test_an_unexpected_exception_is_retried_whatever_its_code(code: ErrorCode) -> None:
    work = Env().take()
    work.end(OutcomeKind.FAILED, code, "why", unexpected=True)
    assert work.disposition is Disposition.TRANSIENT
    work.end(OutcomeKind.FAILED, code, "why")
    assert work.disposition is code.disposition


@pytest.mark.parametrize("kind", [OutcomeKind.APPLIED, OutcomeKind.ALREADY_APPLIED])
def test_a_finished_work_finishes_its_positions(kind: OutcomeKind) -> None:
    env = Env()
    work = env.take()
    work.end(kind)
    settled = env.state.settle(work, [])
    assert settled is Settled.FINISHED and not settled.counted
    assert env.state.ledger.to_commit() == {TP: 1}


@pytest.mark.parametrize("code", [c for c in ErrorCode if c.disposition is Disposition.POISON])
def test_poison_is_dead_lettered_at_once_and_not_counted_as_a_retry(code: ErrorCode) -> None:
    env = Env(max_attempts=10)
    settled, work = env.fail(code)
    assert (settled, work.code, work.message) == (Settled.DEAD, code, "why")
    assert not settled.counted
    assert env.state.in_flight() == 0 and env.state.ledger.to_commit() == {TP: 0}  # on the ack


def test_transient_is_retried_until_its_own_attempts_are_spent() -> None:
    code = ErrorCode.MYSQL_DEADLOCK
    env = Env(max_attempts=3)
    assert env.fail(code)[0] is Settled.RETRY
    env.wait_out()
    retry, work = env.fail(code)
    assert (retry, work.attempts, retry.counted) == (Settled.RETRY, 2, True)
    assert env.retried_after(2.0)  # the backoff of attempt 2, no cap
    dead, work = env.fail(code)
    assert dead is Settled.EXHAUSTED and dead.counted
    assert work.message == "retries exhausted after 3 attempts: why"
    assert env.state.in_flight() == 0 and env.state.ledger.to_commit() == {TP: 0}  # on the ack


def test_attempts_that_ended_systemic_are_not_the_works_own() -> None:
    env = Env(max_attempts=3)
    for _ in range(3):
        assert env.fail(ErrorCode.ES_429)[0] is Settled.SYSTEMIC
        env.wait_out()
    assert env.fail(ErrorCode.MYSQL_DEADLOCK)[0] is Settled.RETRY  # attempt 4, its own 1st
    env.wait_out()
    settled, work = env.fail(ErrorCode.MYSQL_DEADLOCK)  # attempt 5, its own 2nd
    assert (settled, work.attempts) == (Settled.RETRY, 5)
    assert env.retried_after(2.0)


def test_an_unexpected_poison_code_is_retried_first() -> None:
    settled, _ = Env().fail(ErrorCode.PROJECTION_ERROR, unexpected=True)
    assert settled is Settled.RETRY


@pytest.mark.parametrize(
    ("code", "cap"),
    [
        (ErrorCode.ES_429, SYSTEMIC_RETRY_CAP_S),
        (ErrorCode.SCHEMA_FENCED, SYSTEMIC_RETRY_CAP_S),
        (ErrorCode.ES_UNAVAILABLE, OUTAGE_RETRY_CAP_S),
        (ErrorCode.MYSQL_UNAVAILABLE, OUTAGE_RETRY_CAP_S),
    ],
)
def test_systemic_is_retried_forever_with_a_cap(code: ErrorCode, cap: float) -> None:
    env = Env(max_attempts=3)
    for _ in range(98):
        assert env.fail(code)[0] is Settled.SYSTEMIC
        env.wait_out()
    settled, work = env.fail(code)
    assert (settled, work.attempts, settled.counted) == (Settled.SYSTEMIC, 99, True)
    assert env.state.degraded is code and env.state.pressure() == code
    assert env.retried_after(cap)


def test_a_work_whose_partitions_were_revoked_is_dropped() -> None:
    env = Env()
    work = env.take()
    work.end(OutcomeKind.FAILED, ErrorCode.ES_429, "why")
    env.state.revoke({TP})
    env.state.forget(TP)
    assert env.state.settle(work, []) is Settled.DROPPED
    assert env.state.in_flight() == 0 and env.state.waiting(ErrorCode.ES_429) == 0
