"""Projectors and the registry that finds one per aggregate type (invariant 6): the consumer, the
rebuild and the repair all build a type's documents the one way its `Projector` does."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from searchsync.errors import CanonicalizationError, ErrorCode, PoisonMessage
from searchsync.events import MAX_REVISION
from searchsync.naming import AGGREGATE_TYPE
from searchsync.projection._document import (
    SYNC_HASH,
    TOMBSTONED_AT,
    Document,
    format_timestamp,
    sync_hash,
)
from searchsync.projection._relations import (
    Child,
    Lookup,
    Row,
    check_columns,
    check_identifiers,
    check_relations,
)
from searchsync.projection.canonical import encode_normalized, normalize
from searchsync.projection.mapping import RESERVED_PROPERTIES, with_reserved

__all__ = ["RESERVED_FIELDS", "Projector", "ProjectorRegistry", "Row"]


RESERVED_FIELDS = frozenset(RESERVED_PROPERTIES).difference({"is_deleted"})
"""Fields `Projector.project` sets itself; a `build` function must not return them."""


@dataclass(frozen=True, slots=True)
class Projector:
    """How to read and project one aggregate type (docs/consumer.md, "Adding an aggregate type").

    - `table`, `columns`: identifiers; the columns include `id_column`, `revision_column` and
      every column `build` reads. Every row is read, soft-deleted ones included.
    - `id_column`: the primary key, an integer or a string column; the document id (and the
      outbox ``aggregate_id``) is its text, ``str(42)`` for an integer. `revision_column`: the
      row's revision (an integer that rises by one per change).
    - `build(row)`: the type's own fields, with ``is_deleted`` (a `bool`) and none of
      `RESERVED_FIELDS`; a row it cannot project raises `PoisonMessage(PROJECTION_ERROR)` (so do
      `KeyError`, `TypeError`, `ValueError`); any other exception is a bug, retried first.
    - `mapping`: the index body with the type's own properties; searchsync adds its reserved
      ones (`searchsync.projection.mapping.RESERVED_PROPERTIES`), which it may state with the
      same type. ``dynamic: strict`` at the root unless `dynamic_mapping` says otherwise.
    - `deleted_at_column`: a DATETIME column (naive: UTC), one of `columns`, that a soft-deleted
      document carries as ``tombstoned_at``; without it the tombstone purge never removes one.
    - `canonical_fields`: a promise that `build` returns canonical fields already
      (``normalize(fields) == fields``, proven by a property test), so `project` skips the walk.
    - `children`, `lookups`: rows of other tables put on the row before `build`
      (`searchsync.projection._relations`).
    - `dynamic_mapping`: True when the mapping is meant not to be ``dynamic: strict``
      (``searchsync config check`` refuses such a mapping otherwise).
    """

    aggregate_type: str
    schema_version: int
    table: str
    columns: tuple[str, ...]
    build: Callable[[Row], dict[str, Any]]
    mapping: dict[str, Any]
    deleted_at_column: str | None = "deleted_at"
    canonical_fields: bool = False
    children: tuple[Child, ...] = ()
    lookups: tuple[Lookup, ...] = ()
    id_column: str = "id"
    revision_column: str = "revision"
    dynamic_mapping: bool = False

    def __post_init__(self) -> None:
        if not AGGREGATE_TYPE.fullmatch(self.aggregate_type):
            raise ValueError(f"aggregate_type {self.aggregate_type!r}: want [a-z][a-z0-9_]*")
        version = self.schema_version
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise ValueError("schema_version must be an int >= 1")
        check_identifiers(self, "table", "id_column", "revision_column")
        check_columns(self.columns, "columns", self.aggregate_type)
        if lacking := [c for c in (self.id_column, self.revision_column) if c not in self.columns]:
            raise ValueError(f"columns must include {lacking} (the id and revision columns)")
        if self.id_column == self.revision_column:
            raise ValueError("id_column and revision_column must be two columns")
        if self.deleted_at_column is not None and self.deleted_at_column not in self.columns:
            raise ValueError(
                f"deleted_at_column {self.deleted_at_column!r} is not one of the columns; "
                "name the soft-delete time column, or pass deleted_at_column=None"
            )
        check_relations(self.columns, self.children, self.lookups)
        # the team's mapping holds its own fields; searchsync adds its reserved properties
        object.__setattr__(self, "mapping", with_reserved(self.aggregate_type, self.mapping))

    def project(self, row: Row) -> Document:
        """Build the document of `row`; raise `PoisonMessage("PROJECTION_ERROR")` if impossible."""
        doc_id = _doc_id(row.get(self.id_column))
        revision = _revision(row.get(self.revision_column))
        try:
            fields = self.build(row)
        except (KeyError, TypeError, ValueError) as exc:  # a PoisonMessage is none of them
            raise _error(doc_id, f"{type(exc).__name__}: {exc}") from exc
        if not RESERVED_FIELDS.isdisjoint(fields):
            clash = sorted(RESERVED_FIELDS.intersection(fields))
            raise _error(doc_id, f"build() returned reserved fields {clash}")
        is_deleted = fields.get("is_deleted")
        if is_deleted is not True and is_deleted is not False:
            raise _error(doc_id, "build() must return is_deleted as a bool")
        column = self.deleted_at_column if is_deleted else None
        deleted_at = None if column is None else row.get(column)
        if deleted_at is not None and not isinstance(deleted_at, datetime):
            raise _error(doc_id, f"{column} must be a DATETIME, got {type(deleted_at).__name__}")
        operational = {} if deleted_at is None else {TOMBSTONED_AT: format_timestamp(deleted_at)}
        return self._seal(doc_id, revision, fields, operational, reproducible=True)

    def key_of(self, row: Row) -> str:
        """The document id of `row` (its `id_column` as text), without checking it."""
        value = row[self.id_column]
        return value if value.__class__ is str else str(value)

    def revision_of(self, row: Row) -> int | None:
        """The revision of `row`; None unless an int (`project` then says why)."""
        revision = row.get(self.revision_column)
        return revision if isinstance(revision, int) and not isinstance(revision, bool) else None

    def tombstone(
        self, aggregate_id: str, revision: int, *, at: datetime | None = None
    ) -> Document:
        """The document of a hard-deleted row at `revision`: ``is_deleted: true`` holds the
        version so a late upsert cannot resurrect the row (invariant 4); ``tombstoned_at`` is
        `at` (default now), outside the hash, so the document is not `reproducible`."""
        doc_id, version = _doc_id(aggregate_id), _revision(revision)
        operational = {TOMBSTONED_AT: format_timestamp(at or datetime.now(UTC))}
        return self._seal(doc_id, version, {"is_deleted": True}, operational, reproducible=False)

    def _seal(
        self,
        doc_id: str,
        revision: int,
        fields: Mapping[str, Any],
        operational: Mapping[str, Any],
        *,
        reproducible: bool,
    ) -> Document:
        unsigned = {**fields, "id": doc_id, "source_revision": revision}
        unsigned["projection_schema_version"] = self.schema_version
        try:
            body = unsigned if self.canonical_fields else normalize(unsigned)
            digest = hashlib.sha256(encode_normalized(body)).hexdigest()
            # The hash covers the projected fields only; operational fields join the body after.
            body["projection_hash"] = digest
            body[SYNC_HASH] = sync_hash(self.aggregate_type, doc_id)
            body.update(operational)  # ASCII timestamps: canonical already
            data = encode_normalized(body)
        except CanonicalizationError as exc:
            raise _error(doc_id, str(exc)) from exc
        is_deleted = bool(fields["is_deleted"])
        return Document(doc_id, revision, body, digest, is_deleted, data, reproducible)


class ProjectorRegistry:
    """Maps an aggregate type to its one projector. Build one per process; no global instance."""

    def __init__(self) -> None:
        self._projectors: dict[str, Projector] = {}

    def register(self, projector: Projector) -> None:
        """Add `projector`; a second projector for the same type is a `ValueError`."""
        if projector.aggregate_type in self._projectors:
            raise ValueError(f"a projector for {projector.aggregate_type!r} is already registered")
        self._projectors[projector.aggregate_type] = projector

    def get(self, aggregate_type: str) -> Projector:
        """The projector of `aggregate_type`; an unknown type is poison: it can never succeed."""
        try:
            return self._projectors[aggregate_type]
        except KeyError:
            raise PoisonMessage(
                ErrorCode.UNKNOWN_AGGREGATE_TYPE, f"no projector registered for {aggregate_type!r}"
            ) from None

    def types(self) -> tuple[str, ...]:
        return tuple(sorted(self._projectors))


def projection_error(message: str) -> PoisonMessage:
    return PoisonMessage(ErrorCode.PROJECTION_ERROR, message)


def _error(doc_id: str, message: str) -> PoisonMessage:
    return projection_error(f"{doc_id}: {message}")


def _doc_id(value: object) -> str:
    # The id is both the _id and the body's NFC'd `id`: a non-NFC id would make them differ.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # an integer key: its decimal text, as CONCAT and CAST write it
    if not isinstance(value, str) or not value:
        raise projection_error(f"id must be an integer or a non-empty string, got {value!r}")
    if not value.isascii() and unicodedata.normalize("NFC", value) != value:
        raise projection_error(f"id {value!r} is not in Unicode NFC")
    if len(value.encode("utf-8")) > 512:
        raise projection_error(f"id longer than 512 bytes: {value[:40]!r}...")
    return value


def _revision(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise projection_error(f"revision must be an int, got {value!r}")
    if not 1 <= value <= MAX_REVISION:
        raise projection_error(f"revision {value} outside 1..2^63-1")
    return value
