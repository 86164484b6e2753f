"""How the processor ends a work (`Work.end`): its plan (`plan_one`), the refusals of the projector,
the reads that failed, the writes, and the one log line per event outcome."""

from __future__ import annotations

import logging

from searchsync.errors import ErrorCode, PoisonMessage, RevisionRegression, TransientError
from searchsync.observability.logs import log_event_outcome
from searchsync.projection import Projector, Row
from searchsync.search.sink import OutcomeKind, WriteOutcome
from searchsync.stream.coalesce import Work
from searchsync.types import Operation, Position, ThinEvent

log = logging.getLogger(__name__)


def plan_one(
    projector: Projector, alias: str, work: Work, row: Row | None, floors: dict[str, int]
) -> None:
    """Plan `work`'s document from its `row` (None: gone, a tombstone above the floor)."""
    schema = projector.schema_version
    if row is None:
        revision = max(work.max_revision, floors.get(work.key.aggregate_id, 0))
        work.plan(alias, schema, projector.tombstone(work.key.aggregate_id, revision))
        return
    loaded = projector.revision_of(row)
    if loaded is None:  # not an int: the projector says why (PROJECTION_ERROR)
        work.plan(alias, schema, projector.project(row))
        return
    if loaded < work.max_revision:
        raise RevisionRegression(
            f"the primary's row is at revision {loaded}, older than event revision "
            f"{work.max_revision}: the revision went backwards (id re-created without "
            "its revision floor?)"
        )
    work.plan(alias, schema, projector.project(row), loaded)


def failed_plan(
    projector: Projector, alias: str, work: Work, row: Row | None, exc: Exception
) -> None:
    """A work the projector refused (its `PoisonMessage`) or raised on (PROJECTION_ERROR,
    unexpected)."""
    if isinstance(exc, PoisonMessage):
        code, message, unexpected = exc.code, exc.message, False
    else:
        code, unexpected = ErrorCode.PROJECTION_ERROR, True
        message = f"projector raised {type(exc).__name__}: {exc}"
    loaded = None if row is None else projector.revision_of(row)
    work.plan(alias, projector.schema_version, None, loaded)
    work.end(OutcomeKind.FAILED, code, message, unexpected=unexpected)


def failed_work(work: Work, code: ErrorCode, message: str | None) -> None:
    """`work` failed before (or without) a plan."""
    work.plan()
    work.end(OutcomeKind.FAILED, code, message)


def read_failed(work: Work, exc: Exception, aggregate_type: str) -> None:
    """A work whose rows could not be read: the error's code, or INTERNAL."""
    if isinstance(exc, TransientError | PoisonMessage):
        failed_work(work, exc.code, exc.message)
        return
    log.warning("reading the truth raised unexpectedly", exc_info=exc)
    message = f"reading {aggregate_type} raised {type(exc).__name__}: {exc}"
    failed_work(work, ErrorCode.INTERNAL, message)


def is_rebuild(work: Work) -> bool:
    return any(event.operation is Operation.REBUILD for event, _ in work.events)


def postdates(work: Work, row: Row, projector: Projector) -> bool:
    """Every event of `work` is newer than `row`: none of them can have brought this row."""
    revision = projector.revision_of(row)
    return revision is not None and all(e.source_revision > revision for e, _ in work.events)


def row_behind(row: Row | None, work: Work, projector: Projector) -> bool:
    revision = None if row is None else projector.revision_of(row)
    return revision is not None and revision < work.max_revision


def end_written(work: Work, outcome: WriteOutcome) -> None:
    """AHEAD is the caller's business (ValueError here)."""
    code = outcome.code
    work.end(outcome.kind, code, None if code is None else outcome.message)


def log_outcome(
    log: logging.Logger,
    event: ThinEvent,
    pos: Position,
    work: Work | None,
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
        loaded_revision=work.loaded_revision if work else None,
        projection_schema_version=work.schema_version if work else None,
        target_alias=work.alias if work else None,
        operation=event.operation.value,
        attempt=attempt,
        result=result,
        error_code=error_code,
        error_message=error_message,
        topic=pos.topic,
        partition=pos.partition,
        offset=pos.offset,
    )
