"""The one JSON log line per event outcome (docs/design.md, "Dead letters and the event
log line")."""

from __future__ import annotations

import logging

from searchsync.errors import ErrorCode
from searchsync.observability.logs import log_event_outcome
from searchsync.stream.verdict import Verdict
from searchsync.types import Position, ThinEvent

__all__ = ["log_outcome"]


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
