"""A work on its way through the processor, and the verdicts it can end in.

`Planned` is one work with its projector, write target and projected document; the functions
turn a plan (or a work that never got one) and what happened to it into its `Verdict`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from searchsync.errors import ErrorCode, PoisonMessage, TransientError
from searchsync.projection import Document, Projector, Row
from searchsync.search.sink import OutcomeKind, WriteOutcome
from searchsync.stream.coalesce import Work
from searchsync.stream.verdict import Result, Verdict
from searchsync.types import Operation

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Planned:
    """One work, ready to write."""

    work: Work
    projector: Projector
    alias: str
    document: Document
    loaded_revision: int | None  # None: the row is gone


def done(plan: Planned, result: Result) -> Verdict:
    return Verdict(
        plan.work,
        result,
        document=plan.document,
        alias=plan.alias,
        loaded_revision=plan.loaded_revision,
        schema_version=plan.projector.schema_version,
    )


def failed(plan: Planned, code: ErrorCode, message: str | None) -> Verdict:
    """A FAILED verdict for a planned write, with what is known of it."""
    return Verdict(
        plan.work,
        Result.FAILED,
        code,
        message,
        alias=plan.alias,
        loaded_revision=plan.loaded_revision,
        schema_version=plan.projector.schema_version,
    )


def failed_plan(
    projector: Projector,
    alias: str,
    work: Work,
    row: Row | None,
    code: ErrorCode,
    message: str,
    unexpected: bool = False,
) -> Verdict:
    """A FAILED verdict for a work that could not be planned (its row read, or not)."""
    return Verdict(
        work,
        Result.FAILED,
        code,
        message,
        unexpected=unexpected,
        alias=alias,
        loaded_revision=None if row is None else row_revision(row),
        schema_version=projector.schema_version,
    )


def failed_work(work: Work, code: ErrorCode, message: str) -> Verdict:
    return Verdict(work, Result.FAILED, code, message)


def read_failed(work: Work, exc: Exception, aggregate_type: str) -> Verdict:
    """The verdict of a work whose rows could not be read: the error's code, or INTERNAL."""
    if isinstance(exc, TransientError | PoisonMessage):
        return failed_work(work, exc.code, exc.message)
    log.warning("reading the truth raised unexpectedly", exc_info=exc)
    message = f"reading {aggregate_type} raised {type(exc).__name__}: {exc}"
    return failed_work(work, ErrorCode.INTERNAL, message)


def write_failed(plan: Planned) -> Verdict:
    return failed(plan, ErrorCode.INTERNAL, "the sink raised unexpectedly (see the log)")


def is_rebuild(work: Work) -> bool:
    """True when one of the work's events is a REBUILD (the repair job's request)."""
    return any(event.operation is Operation.REBUILD for event, _ in work.events)


def row_behind(row: Row | None, work: Work) -> bool:
    """True when `row` is older than the newest event of `work`."""
    revision = None if row is None else row_revision(row)
    return revision is not None and revision < work.max_revision


def row_revision(row: Row) -> int | None:
    """The row's revision, or None if it is not an int (the projector refuses such a row)."""
    revision = row.get("revision")
    return revision if isinstance(revision, int) and not isinstance(revision, bool) else None


def from_outcome(plan: Planned, outcome: WriteOutcome) -> Verdict:
    if outcome.kind is OutcomeKind.APPLIED:
        return done(plan, Result.APPLIED)
    if outcome.kind is OutcomeKind.ALREADY_APPLIED:
        return done(plan, Result.ALREADY_APPLIED)
    if outcome.code is None:  # AHEAD is handled by the caller; nothing else lacks a code
        raise ValueError(f"a {outcome.kind.value} outcome without an error code")
    return failed(plan, outcome.code, outcome.message)
