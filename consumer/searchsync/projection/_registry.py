"""Projectors and the registry that finds one per aggregate type (invariant 6).

A projector turns one MySQL row into one complete search document. The consumer, the rebuild
and the repair job all get their projector from a `ProjectorRegistry`, so there is exactly one
way to build a document of a given type and `projection_schema_version`.

What a document is, and its operational fields: `searchsync.projection._document`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from searchsync.errors import ErrorCode, PoisonMessage
from searchsync.projection._document import (
    SYNC_HASH,
    TOMBSTONED_AT,
    Document,
    format_timestamp,
    sync_hash,
)
from searchsync.projection._relations import (
    AGGREGATE_TYPE,
    IDENTIFIER,
    Child,
    Lookup,
    Row,
    check_relations,
)
from searchsync.projection.canonical import (
    CanonicalizationError,
    encode_normalized,
    normalize,
    sha256_hex,
)

__all__ = ["RESERVED_FIELDS", "Projector", "ProjectorRegistry", "Row"]


RESERVED_FIELDS = frozenset(
    {
        "id",
        "source_revision",
        "projection_schema_version",
        "projection_hash",
        TOMBSTONED_AT,
        SYNC_HASH,
    }
)
"""Fields `Projector.project` sets itself; a `build` function must not return them."""


_REQUIRED_MAPPING_FIELDS = RESERVED_FIELDS | {"is_deleted"}
_MAX_EXTERNAL_VERSION = 2**63 - 1  # Elasticsearch external versions are non-negative longs


@dataclass(frozen=True, slots=True)
class Projector:
    """How to read and project one aggregate type.

    - `table`, `columns`: where the rows live and which columns to read: at least ``id``,
      ``revision`` and every column `build` reads. The truth port (`searchsync.mysql.truth`) builds
      the queries from them (quoted identifiers, parameters); every row is read, soft-deleted
      rows included. Both are plain identifiers (``[A-Za-z_][A-Za-z0-9_]*``, at most 64).
    - `build(row)`: the type's own fields, including ``is_deleted`` (a `bool`), and none of
      `RESERVED_FIELDS`. It raises `PoisonMessage(ErrorCode.PROJECTION_ERROR, ...)` for a row it
      cannot project; `KeyError`, `TypeError` and `ValueError` from it are turned into that too.
      Any other exception is a bug: the pipeline retries the row, then dead-letters it as
      PROJECTION_ERROR too (see `searchsync.errors`).
    - `mapping`: the index body (``{"settings": ..., "mappings": ...}``) for this type; its
      properties must cover `RESERVED_FIELDS` (``tombstoned_at`` as ``date``) and ``is_deleted``.
    - `deleted_at_column`: the column holding a soft delete's time (a DATETIME, naive values are
      UTC). A projected document with ``is_deleted: true`` gets it as ``tombstoned_at``; without
      it (None, or the row's value is NULL) a soft-deleted document has no ``tombstoned_at`` and
      the tombstone purge never removes it. It must be one of `columns` when set.
    - `canonical_fields`: True promises that `build` returns its fields in canonical form already
      (`searchsync.projection.canonical`: NFC `str` keys and strings, ints within 64 bits, no
      floats, no other types), so `project` skips the normalizing walk. Prove it with a property
      test (``normalize(fields) == fields``, as tests/unit/test_wiki_page_canonical.py does);
      when in doubt leave it False: the output is the same, only slower.
    - `children`, `lookups`: rows of other tables the document is built from (`Child`: an
      article's tags; `Lookup`: its author). The truth port reads each with one ``IN (...)``
      query per batch and hands `build` the root row with ``row[child.name]`` (a list of rows,
      in a deterministic order) and ``row[lookup.name]`` (a row or None); names must not be
      columns. A lookup's ``via`` is one of `columns`, or of a child's (``through``, each child
      row gets its looked-up row; `searchsync.projection._relations`).

    Adding an aggregate type: a module whose ``projectors()`` returns it, named in
    ``[projection] modules`` (`searchsync.projection.plugins`; docs/consumer.md)::

        def build_note(row: Row) -> dict[str, Any]:
            return {"text": str(row["text"]), "is_deleted": row["deleted_at"] is not None}

        def projectors() -> list[Projector]:
            return [
                Projector(
                    aggregate_type="note",
                    schema_version=1,
                    table="note",
                    columns=("id", "text", "revision", "deleted_at"),
                    build=build_note,
                    mapping=load_json("schemas/index/note.json"),
                )
            ]
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

    def __post_init__(self) -> None:
        if not AGGREGATE_TYPE.fullmatch(self.aggregate_type):
            raise ValueError(f"aggregate_type {self.aggregate_type!r}: want [a-z][a-z0-9_]*")
        if isinstance(self.schema_version, bool) or not isinstance(self.schema_version, int):
            raise ValueError("schema_version must be an int")
        if self.schema_version < 1:
            raise ValueError("schema_version must be >= 1")
        if not isinstance(self.table, str) or not IDENTIFIER.fullmatch(self.table):
            raise ValueError(f"table {self.table!r}: want an identifier [A-Za-z_][A-Za-z0-9_]*")
        if not isinstance(self.columns, tuple):
            raise ValueError("columns must be a tuple of column names")
        bad = [c for c in self.columns if not isinstance(c, str) or not IDENTIFIER.fullmatch(c)]
        if bad:
            raise ValueError(f"columns {bad!r}: want identifiers [A-Za-z_][A-Za-z0-9_]*")
        if len(set(self.columns)) != len(self.columns):
            raise ValueError(f"columns {self.columns!r} name a column twice")
        lacking = [c for c in ("id", "revision") if c not in self.columns]
        if lacking:
            raise ValueError(f"columns must include {lacking}")
        if self.deleted_at_column is not None and self.deleted_at_column not in self.columns:
            raise ValueError(
                f"deleted_at_column {self.deleted_at_column!r} is not one of the columns; "
                "name the soft-delete time column, or pass deleted_at_column=None"
            )
        check_relations(self.columns, self.children, self.lookups)
        properties = self.mapping.get("mappings", {}).get("properties", {})
        missing = sorted(_REQUIRED_MAPPING_FIELDS - set(properties))
        if missing:
            raise ValueError(f"mapping of {self.aggregate_type} lacks properties {missing}")

    def project(self, row: Row) -> Document:
        """Build the document of `row`; raise `PoisonMessage("PROJECTION_ERROR")` if impossible."""
        doc_id = _doc_id(row.get("id"))
        revision = _revision(row.get("revision"))
        try:
            fields = self.build(row)
        except PoisonMessage:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise _error(doc_id, f"{type(exc).__name__}: {exc}") from exc
        if not RESERVED_FIELDS.isdisjoint(fields):
            clash = sorted(RESERVED_FIELDS.intersection(fields))
            raise _error(doc_id, f"build() returned reserved fields {clash}")
        is_deleted = fields.get("is_deleted")
        if is_deleted is not True and is_deleted is not False:
            raise _error(doc_id, "build() must return is_deleted as a bool")
        operational: dict[str, Any] = {}
        if is_deleted and self.deleted_at_column is not None:
            deleted_at = row.get(self.deleted_at_column)
            if deleted_at is not None:
                if not isinstance(deleted_at, datetime):
                    raise _error(
                        doc_id,
                        f"{self.deleted_at_column} must be a DATETIME, got "
                        f"{type(deleted_at).__name__}",
                    )
                operational[TOMBSTONED_AT] = format_timestamp(deleted_at)
        return self._seal(doc_id, revision, fields, operational, reproducible=True)

    def tombstone(
        self, aggregate_id: str, revision: int, *, at: datetime | None = None
    ) -> Document:
        """The document for a row that no longer exists (hard delete) at `revision`.

        It carries ``id``, ``source_revision``, ``projection_schema_version``,
        ``projection_hash`` and ``is_deleted: true`` (enough to hold the version in
        Elasticsearch so that a late upsert cannot resurrect the row, invariant 4), plus
        ``tombstoned_at``: `at`, by default now. Only the first write of a revision is stored (a
        second one is a 409), so the stored time is when the tombstone was first written. The
        hash does not depend on `at`; the document is not `reproducible`.
        """
        doc_id = _doc_id(aggregate_id)
        stamp = format_timestamp(at if at is not None else datetime.now(UTC))
        return self._seal(
            doc_id,
            _revision(revision),
            {"is_deleted": True},
            {TOMBSTONED_AT: stamp},
            reproducible=False,
        )

    def _seal(
        self,
        doc_id: str,
        revision: int,
        fields: Mapping[str, Any],
        operational: Mapping[str, Any],
        *,
        reproducible: bool,
    ) -> Document:
        unsigned = dict(fields)
        unsigned["id"] = doc_id
        unsigned["source_revision"] = revision
        unsigned["projection_schema_version"] = self.schema_version
        try:
            # `body` is a dict of its own: `normalize` builds one, and `unsigned` is a copy.
            body = unsigned if self.canonical_fields else normalize(unsigned)
            digest = sha256_hex(encode_normalized(body))
            # The hash covers the projected fields only; operational fields join the body after.
            body["projection_hash"] = digest
            body[SYNC_HASH] = sync_hash(self.aggregate_type, doc_id)
            if operational:
                body.update(normalize(dict(operational)))
            data = encode_normalized(body)
        except CanonicalizationError as exc:
            raise _error(doc_id, str(exc)) from exc
        return Document(
            doc_id=doc_id,
            source_revision=revision,
            body=body,
            projection_hash=digest,
            is_deleted=bool(fields["is_deleted"]),
            encoded=data,
            reproducible=reproducible,
        )


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
        """The registered aggregate types, sorted."""
        return tuple(sorted(self._projectors))


def _error(doc_id: str, message: str) -> PoisonMessage:
    return PoisonMessage(ErrorCode.PROJECTION_ERROR, f"{doc_id}: {message}")


def _doc_id(value: object) -> str:
    # The id is both the Elasticsearch _id and the body's `id`; canonical JSON would NFC the
    # latter, so a non-NFC id would make them differ. Refuse it instead.
    if not isinstance(value, str) or not value:
        raise PoisonMessage(
            ErrorCode.PROJECTION_ERROR, f"id must be a non-empty string, got {value!r}"
        )
    if not value.isascii() and unicodedata.normalize("NFC", value) != value:
        raise PoisonMessage(ErrorCode.PROJECTION_ERROR, f"id {value!r} is not in Unicode NFC")
    if len(value.encode("utf-8")) > 512:
        raise PoisonMessage(
            ErrorCode.PROJECTION_ERROR, f"id longer than 512 bytes: {value[:40]!r}..."
        )
    return value


def _revision(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PoisonMessage(ErrorCode.PROJECTION_ERROR, f"revision must be an int, got {value!r}")
    if not 1 <= value <= _MAX_EXTERNAL_VERSION:
        raise PoisonMessage(ErrorCode.PROJECTION_ERROR, f"revision {value} outside 1..2^63-1")
    return value
