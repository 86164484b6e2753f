"""The processor's answer for one work (`Verdict`), its builders, and `decide`: from the
`ErrorCode` table alone (docs/design.md, "Retry"), POISON is dead-lettered at once, TRANSIENT
retried until the work's attempts are spent, SYSTEMIC retried forever without spending them, at
least every `SYSTEMIC_RETRY_CAP_S` (`OUTAGE_RETRY_CAP_S` when unreachable)."""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, NamedTuple

from searchsync.errors import (
    Disposition,
    ErrorCode,
    PoisonMessage,
    RevisionRegression,
    TransientError,
)
from searchsync.observability.logs import log_event_outcome
from searchsync.projection import Document, Projector, Row
from searchsync.search.sink import FINISHED_KINDS, OutcomeKind, StoredProjection, WriteOutcome
from searchsync.stream.coalesce import Work
from searchsync.types import Operation, Position, ThinEvent

log = logging.getLogger(__name__)

SYSTEMIC_RETRY_CAP_S: Final = 30.0  # a systemic failure is retried at least this often, forever
OUTAGE_CODES: Final = frozenset(
    {ErrorCode.ES_UNAVAILABLE, ErrorCode.ES_5XX, ErrorCode.MYSQL_UNAVAILABLE}
)
"""A dependency that could not be reached (down, restarting) rather than one shedding load: the
first write that succeeds releases every work waiting on one of these codes at once."""
OUTAGE_RETRY_CAP_S: Final = 10.0


@dataclass(slots=True)
class Verdict:
    """What became of one work: FAILED with a `code`, else with its `document`. `unexpected`: an
    unclassified exception (retried before dead-lettered). Read-only (not frozen: one is built per
    work)."""

    work: Work
    kind: OutcomeKind
    code: ErrorCode | None = None
    message: str | None = None
    unexpected: bool = False
    document: Document | None = None
    alias: str | None = None
    loaded_revision: int | None = None
    schema_version: int | None = None

    def __post_init__(self) -> None:
        if self.kind is OutcomeKind.AHEAD:
            raise ValueError("AHEAD is the processor's business, never a verdict")
        if (self.kind is OutcomeKind.FAILED) != (self.code is not None):
            raise ValueError("a verdict has an error code exactly when it failed")

    @property
    def finished(self) -> bool:
        return self.kind in FINISHED_KINDS

    @property
    def disposition(self) -> Disposition:
        """A FAILED verdict's disposition (the `ErrorCode` table)."""
        if self.code is None:
            raise ValueError(f"a {self.kind.value} verdict has no disposition")
        return Disposition.TRANSIENT if self.unexpected else self.code.disposition


@dataclass(slots=True)
class Planned:
    work: Work
    projector: Projector
    alias: str
    document: Document
    loaded_revision: int | None  # None: the row is gone


def plan_one(
    projector: Projector, alias: str, work: Work, row: Row | None, floors: dict[str, int]
) -> Planned:
    if row is None:
        revision = max(work.max_revision, floors.get(work.key.aggregate_id, 0))
        doc = projector.tombstone(work.key.aggregate_id, revision)
        return Planned(work, projector, alias, doc, None)
    loaded = projector.revision_of(row)
    if loaded is None:  # not an int: the projector says why (PROJECTION_ERROR)
        return Planned(work, projector, alias, projector.project(row), None)
    if loaded < work.max_revision:
        raise RevisionRegression(
            f"the primary's row is at revision {loaded}, older than event revision "
            f"{work.max_revision}: the revision went backwards (id re-created without "
            "its revision floor?)"
        )
    return Planned(work, projector, alias, projector.project(row), loaded)


def verdict_of(
    plan: Planned, kind: OutcomeKind, code: ErrorCode | None = None, message: str | None = None
) -> Verdict:
    """The verdict of a planned work: a finished one carries its document, a failed one a code."""
    doc = None if code is not None else plan.document
    p, schema = plan, plan.projector.schema_version  # positional: one verdict per work
    return Verdict(p.work, kind, code, message, False, doc, p.alias, p.loaded_revision, schema)


def failed_plan(
    projector: Projector, alias: str, work: Work, row: Row | None, exc: Exception
) -> Verdict:
    """A work the projector refused (its `PoisonMessage`) or raised on (PROJECTION_ERROR,
    unexpected)."""
    if isinstance(exc, PoisonMessage):
        code, message, unexpected = exc.code, exc.message, False
    else:
        code, unexpected = ErrorCode.PROJECTION_ERROR, True
        message = f"projector raised {type(exc).__name__}: {exc}"
    loaded, schema = None if row is None else projector.revision_of(row), projector.schema_version
    return Verdict(work, OutcomeKind.FAILED, code, message, unexpected, None, alias, loaded, schema)


def failed_work(work: Work, code: ErrorCode, message: str) -> Verdict:
    return Verdict(work, OutcomeKind.FAILED, code, message)


def read_failed(work: Work, exc: Exception, aggregate_type: str) -> Verdict:
    """A work whose rows could not be read: the error's code, or INTERNAL."""
    if isinstance(exc, TransientError | PoisonMessage):
        return failed_work(work, exc.code, exc.message)
    log.warning("reading the truth raised unexpectedly", exc_info=exc)
    message = f"reading {aggregate_type} raised {type(exc).__name__}: {exc}"
    return failed_work(work, ErrorCode.INTERNAL, message)


def is_rebuild(work: Work) -> bool:
    return any(event.operation is Operation.REBUILD for event, _ in work.events)


def postdates(work: Work, row: Row, projector: Projector) -> bool:
    """Every event of `work` is newer than `row`: none of them can have brought this row."""
    revision = projector.revision_of(row)
    return revision is not None and all(e.source_revision > revision for e, _ in work.events)


class Regressed(NamedTuple):
    """A work whose row is older than its events (`plan_one` raised)."""

    projector: Projector
    work: Work
    row: Row
    error: RevisionRegression


def regressed_verdicts(
    alias: str, works: list[Regressed], stored: Mapping[str, StoredProjection | None]
) -> list[Verdict]:
    """Already applied when every event of the work is newer than the row and the index holds the
    newest (a redelivery after the id was re-created below its old revision: the re-created row's
    own event is the one that reports the regression); otherwise a REVISION_REGRESSION."""
    out: list[Verdict] = []
    for r in works:
        stale = postdates(r.work, r.row, r.projector)
        found = stored.get(r.work.key.aggregate_id) if stale else None
        if found is not None and found.version >= r.work.max_revision:
            out.append(Verdict(r.work, OutcomeKind.ALREADY_APPLIED))
        else:
            out.append(failed_plan(r.projector, alias, r.work, r.row, r.error))
    return out


def row_behind(row: Row | None, work: Work, projector: Projector) -> bool:
    revision = None if row is None else projector.revision_of(row)
    return revision is not None and revision < work.max_revision


def from_outcome(plan: Planned, outcome: WriteOutcome) -> Verdict:
    """AHEAD is the caller's business (ValueError here)."""
    code = outcome.code
    return verdict_of(plan, outcome.kind, code, None if code is None else outcome.message)


class Action(enum.Enum):
    FINISH = "finish"  # applied now or before: its positions finish
    RETRY = "retry"  # try again after `RetryPolicy.delay(attempt)`, capped at `cap`
    DEAD = "dead"  # dead-letter its events; they finish on the broker's acknowledgement


class Decision(NamedTuple):
    action: Action
    code: ErrorCode | None = None
    message: str | None = None
    attempt: int = 0  # the backoff's attempt number (RETRY)
    cap: float | None = None  # the longest wait (RETRY)
    systemic: bool = False  # retried without spending the work's attempts; pauses intake
    counted: bool = False  # a TRANSIENT or SYSTEMIC failure (the last one too): a "retry" line


FINISH: Final = Decision(Action.FINISH)


def decide(verdict: Verdict, *, systemic_spent: int, max_attempts: int) -> Decision:
    """What `verdict` means. Pure. `systemic_spent`: the work's attempts that ended SYSTEMIC (not
    counted against `max_attempts`)."""
    code = verdict.code
    if code is None:
        return FINISH
    message = verdict.message or code.value
    what = verdict.disposition
    if what is Disposition.SYSTEMIC:
        cap = OUTAGE_RETRY_CAP_S if code in OUTAGE_CODES else SYSTEMIC_RETRY_CAP_S
        return Decision(Action.RETRY, code, message, systemic_spent + 1, cap, True, True)
    if what is Disposition.TRANSIENT:
        own = verdict.work.attempts - systemic_spent
        if own < max_attempts:
            return Decision(Action.RETRY, code, message, own, counted=True)
        message = f"retries exhausted after {own} attempts: {message}"
        return Decision(Action.DEAD, code, message, counted=True)
    return Decision(Action.DEAD, code, message)


def log_outcome(
    log: logging.Logger,
    event: ThinEvent,
    pos: Position,
    verdict: Verdict | None,
    result: str,
    attempt: int,
    error_code: ErrorCode | None = None,
    error_message: str | None = None,
) -> None:
    """The one JSON log line per event outcome (docs/design.md, "Dead letters and the event log
    line")."""
    log_event_outcome(
        log,
        event_id=event.event_id,
        aggregate_type=event.aggregate_type,
        aggregate_id=event.aggregate_id,
        event_revision=event.source_revision,
        loaded_revision=verdict.loaded_revision if verdict else None,
        projection_schema_version=verdict.schema_version if verdict else None,
        target_alias=verdict.alias if verdict else None,
        operation=event.operation.value,
        attempt=attempt,
        result=result,
        error_code=error_code,
        error_message=error_message,
        topic=pos.topic,
        partition=pos.partition,
        offset=pos.offset,
    )
