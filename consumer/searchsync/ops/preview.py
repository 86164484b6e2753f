"""The document searchsync would write for one row now (``searchsync projection show``): the
row read as the consumer reads it (children and lookups included), projected by its type's
projector; a hard-deleted row's tombstone at its revision floor; or why there is none."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchsync.errors import PoisonMessage
from searchsync.mysql.truth import Truth
from searchsync.projection import Projector


@dataclass(frozen=True, slots=True)
class Preview:
    """`body` is the document (None when there is none); `state` says which case it is:
    ``live``, ``soft-deleted``, ``hard-deleted``, ``missing`` or ``unprojectable``."""

    aggregate_type: str
    aggregate_id: str
    state: str
    source_revision: int | None = None
    body: dict[str, Any] | None = None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.body is not None


async def preview(projector: Projector, truth: Truth, aggregate_id: str) -> Preview:
    """What the consumer would write for `aggregate_id` now (read from the primary)."""
    t = projector.aggregate_type
    rows = await truth.rows_by_id(projector, [aggregate_id], primary=True)
    # an integer key comes back as its own text
    row = rows.get(aggregate_id) or next(iter(rows.values()), None)
    if row is not None:
        try:
            document = projector.project(row)
        except PoisonMessage as exc:
            return Preview(t, aggregate_id, "unprojectable", reason=f"{exc.code}: {exc.message}")
        state = "soft-deleted" if document.is_deleted else "live"
        return Preview(t, aggregate_id, state, document.source_revision, dict(document.body))
    floor = (await truth.revision_floors(t, [aggregate_id], primary=True)).get(aggregate_id)
    if floor is None:
        why = f"no {projector.table} row with id {aggregate_id!r} and no revision floor"
        return Preview(t, aggregate_id, "missing", reason=f"{why}: nothing would be written")
    tombstone = projector.tombstone(aggregate_id, floor)
    return Preview(t, aggregate_id, "hard-deleted", floor, dict(tombstone.body))
