"""The work: the events of one key handled by one re-read of the truth, and what became of them.
The processor plans it from its row (`plan_row`) and ends it in place (`end`, `fail`, `refuse`);
`WorkState.settle` acts on that; `log_outcome` is the one log line per event outcome."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from searchsync.errors import Disposition, ErrorCode, PoisonMessage, RevisionRegression
from searchsync.observability.logs import log_event_outcome
from searchsync.projection import Document, Projector, Row
from searchsync.search.sink import FINISHED_KINDS, OutcomeKind
from searchsync.types import Key, Operation, RawMessage, ThinEvent


@dataclass(slots=True, eq=False)
class Work:
    """The events of one key handled by one re-read of the truth, and what became of them: the
    processor plans it (`alias`, `document`, `loaded_revision`, `schema_version`) and ends it
    (`end`); `WorkState.settle` acts on that. Compared by identity: only the very object
    `take_ready` handed out may be completed or released."""

    key: Key
    events: tuple[ThinEvent, ...]
    positions: tuple[RawMessage, ...]
    """Each event's message, in the same order: the positions this work finishes."""
    attempts: int
    """How many times these events were started, this time included (1 on the first try)."""
    max_revision: int = field(init=False)
    """The highest source revision among the events: the truth must be at least this new."""
    kind: OutcomeKind | None = field(default=None, init=False)
    """None until the processor ended it; FAILED with a `code`, else applied now or before."""
    code: ErrorCode | None = field(default=None, init=False)
    message: str | None = field(default=None, init=False)
    unexpected: bool = field(default=False, init=False)
    """An unclassified exception: retried before it is dead-lettered, whatever its code."""
    alias: str | None = field(default=None, init=False)
    document: Document | None = field(default=None, init=False)
    loaded_revision: int | None = field(default=None, init=False)  # None: no row (or no int)
    schema_version: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        events = self.events
        if len(events) == 1:
            self.max_revision = events[0].source_revision
        else:
            self.max_revision = max((e.source_revision for e in events), default=0)

    @property
    def newest(self) -> ThinEvent:
        """The event with the highest revision (the latest on a tie)."""
        best = self.events[0]
        for event in self.events[1:]:
            if event.source_revision >= best.source_revision:
                best = event
        return best

    def plan(
        self,
        alias: str | None = None,
        schema_version: int | None = None,
        document: Document | None = None,
        loaded_revision: int | None = None,
    ) -> None:
        """What the processor means to write (all None: nothing planned)."""
        self.alias, self.schema_version = alias, schema_version
        self.document, self.loaded_revision = document, loaded_revision

    def end(
        self,
        kind: OutcomeKind,
        code: ErrorCode | None = None,
        message: str | None = None,
        *,
        unexpected: bool = False,
    ) -> None:
        """Its outcome: FAILED with a `code` (the planned document dropped), else finished."""
        if kind is OutcomeKind.AHEAD:
            raise ValueError("AHEAD is the processor's business, never an outcome")
        if (kind is OutcomeKind.FAILED) != (code is not None):
            raise ValueError("a work has an error code exactly when it failed")
        self.kind, self.code, self.message, self.unexpected = kind, code, message, unexpected
        if code is not None:
            self.document = None

    @property
    def finished(self) -> bool:
        return self.kind in FINISHED_KINDS

    @property
    def disposition(self) -> Disposition:
        """A FAILED work's disposition (the `ErrorCode` table; TRANSIENT when `unexpected`)."""
        if self.code is None:
            raise ValueError(f"a work that ended {self.kind} has no disposition")
        return Disposition.TRANSIENT if self.unexpected else self.code.disposition

    def fail(self, code: ErrorCode, message: str | None) -> None:
        """Failed before (or without) a plan."""
        self.plan()
        self.end(OutcomeKind.FAILED, code, message)

    def plan_row(self, projector: Projector, alias: str, row: Row | None, floor: int) -> None:
        """Plan the document from `row` (None: gone, a tombstone above the revision `floor`);
        `RevisionRegression` when the row is older than the events."""
        schema = projector.schema_version
        if row is None:
            revision = max(self.max_revision, floor)
            self.plan(alias, schema, projector.tombstone(self.key.aggregate_id, revision))
            return
        loaded = projector.revision_of(row)
        if loaded is None:  # not an int: the projector says why (PROJECTION_ERROR)
            self.plan(alias, schema, projector.project(row))
            return
        if loaded < self.max_revision:
            raise RevisionRegression(
                f"the primary's row is at revision {loaded}, older than event revision "
                f"{self.max_revision}: the revision went backwards (id re-created without "
                "its revision floor?)"
            )
        self.plan(alias, schema, projector.project(row), loaded)

    def refuse(self, projector: Projector, alias: str, row: Row | None, exc: Exception) -> None:
        """The projector refused the work (its `PoisonMessage`) or raised on it (PROJECTION_ERROR,
        unexpected)."""
        if isinstance(exc, PoisonMessage):
            code, message, unexpected = exc.code, exc.message, False
        else:
            code, unexpected = ErrorCode.PROJECTION_ERROR, True
            message = f"projector raised {type(exc).__name__}: {exc}"
        loaded = None if row is None else projector.revision_of(row)
        self.plan(alias, projector.schema_version, None, loaded)
        self.end(OutcomeKind.FAILED, code, message, unexpected=unexpected)

    @property
    def is_rebuild(self) -> bool:
        return any(event.operation is Operation.REBUILD for event in self.events)

    def log_outcome(
        self,
        log: logging.Logger,
        event: ThinEvent,
        pos: RawMessage,
        result: str,
        error_code: ErrorCode | None = None,
        error_message: str | None = None,
    ) -> None:
        """The one JSON log line per event outcome (docs/design.md, "Dead letters and the event
        log line")."""
        log_event_outcome(
            log,
            event_id=event.event_id,
            aggregate_type=event.aggregate_type,
            aggregate_id=event.aggregate_id,
            event_revision=event.source_revision,
            loaded_revision=self.loaded_revision,
            projection_schema_version=self.schema_version,
            target_alias=self.alias,
            operation=event.operation.value,
            attempt=self.attempts,
            result=result,
            error_code=error_code,
            error_message=error_message,
            topic=pos.topic,
            partition=pos.partition,
            offset=pos.offset,
        )
