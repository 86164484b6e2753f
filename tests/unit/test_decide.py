"""`decide`: what a verdict means, from the error-code table alone (docs/design.md, "Retry")."""

from __future__ import annotations

import pytest
from searchsync.errors import Disposition, ErrorCode
from searchsync.search.sink import OutcomeKind
from searchsync.stream.coalesce import Work
from searchsync.stream.verdict import (
    OUTAGE_RETRY_CAP_S,
    SYSTEMIC_RETRY_CAP_S,
    Action,
    Verdict,
    decide,
)
from searchsync.types import Key, Operation, Position, ThinEvent


def _work(attempts: int) -> Work:
    event = ThinEvent("e", "wiki_page", "a", Operation.UPSERT, 1)
    return Work(Key("wiki_page", "a"), ((event, Position("t", 0, 0)),), attempts)


def _failed(code: ErrorCode, attempts: int = 1, *, unexpected: bool = False) -> Verdict:
    return Verdict(_work(attempts), OutcomeKind.FAILED, code, "why", unexpected=unexpected)


@pytest.mark.parametrize("code", list(ErrorCode))
def test_an_unexpected_exception_is_retried_whatever_its_code(code: ErrorCode) -> None:
    assert _failed(code, unexpected=True).disposition is Disposition.TRANSIENT
    assert _failed(code).disposition is code.disposition


def test_a_finished_verdict_finishes() -> None:
    for kind in (OutcomeKind.APPLIED, OutcomeKind.ALREADY_APPLIED):
        decision = decide(Verdict(_work(1), kind), systemic_spent=0, max_attempts=3)
        assert decision.action is Action.FINISH and not decision.counted


@pytest.mark.parametrize("code", [c for c in ErrorCode if c.disposition is Disposition.POISON])
def test_poison_is_dead_lettered_at_once_and_not_counted_as_a_retry(code: ErrorCode) -> None:
    decision = decide(_failed(code), systemic_spent=0, max_attempts=10)
    assert (decision.action, decision.code, decision.message) == (Action.DEAD, code, "why")
    assert not decision.counted


def test_transient_is_retried_until_its_own_attempts_are_spent() -> None:
    code = ErrorCode.MYSQL_DEADLOCK
    retry = decide(_failed(code, 2), systemic_spent=0, max_attempts=3)
    assert (retry.action, retry.attempt, retry.cap, retry.systemic) == (
        Action.RETRY,
        2,
        None,
        False,
    )
    assert retry.counted
    dead = decide(_failed(code, 3), systemic_spent=0, max_attempts=3)
    assert dead.action is Action.DEAD and dead.counted
    assert dead.message == "retries exhausted after 3 attempts: why"
    # attempts that ended SYSTEMIC are not the work's own
    again = decide(_failed(code, 5), systemic_spent=3, max_attempts=3)
    assert (again.action, again.attempt) == (Action.RETRY, 2)


def test_an_unexpected_poison_code_is_retried_first() -> None:
    verdict = _failed(ErrorCode.PROJECTION_ERROR, 1, unexpected=True)
    assert decide(verdict, systemic_spent=0, max_attempts=3).action is Action.RETRY


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
    decision = decide(_failed(code, 99), systemic_spent=98, max_attempts=3)
    assert (decision.action, decision.attempt, decision.cap) == (Action.RETRY, 99, cap)
    assert decision.systemic and decision.counted
