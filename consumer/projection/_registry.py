"""Projectors and the registry that finds one per aggregate type (invariant 6).

A projector turns one MySQL row into one complete search document. The consumer, the rebuild
and the repair job all get their projector from a `ProjectorRegistry`, so there is exactly one
way to build a document of a given type and `projection_schema_version`.

A document has projected fields (a function of the row and the schema version: they give
``projection_hash``) and operational fields (`OPERATIONAL_FIELDS`, outside the hash): today only
``tombstoned_at``, the time a document became a tombstone, which the tombstone purge reads
(docs/design.md, "Tombstones and their purge").
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from consumer.errors import ErrorCode, PoisonMessage
from consumer.projection.canonical import (
    CanonicalizationError,
    encode_normalized,
    normalize,
    sha256_hex,
)

__all__ = [
    "OPERATIONAL_FIELDS",
    "RESERVED_FIELDS",
    "SYNC_HASH",
    "TOMBSTONED_AT",
    "Document",
    "Projector",
    "ProjectorRegistry",
    "Row",
    "content_hash",
    "format_timestamp",
    "projected_fields",
    "sync_hash",
]

Row = Mapping[str, Any]
"""One row as aiomysql's DictCursor returns it (JSON columns as `str`, DATETIME as `datetime`)."""

TOMBSTONED_AT: Final = "tombstoned_at"
"""When the document became a tombstone (ISO-8601 UTC, millisecond precision, mapped as
``date``): the row's ``deleted_at`` for a soft delete, the time the tombstone was first written
for a hard delete. Absent on live documents."""

SYNC_HASH: Final = "sync_hash"
"""The repair wheel's bucket key of a document (`sync_hash`): a function of its type and id."""

OPERATIONAL_FIELDS: Final = frozenset({TOMBSTONED_AT, SYNC_HASH})
"""Fields of a stored document that are not projected: outside ``projection_hash`` and outside
`Document.projected` (docs/design.md, invariant 6): when a tombstone was written, and the repair
wheel's bucket key (docs/design.md, "Repair")."""

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


def content_hash(body: Mapping[str, Any]) -> str | None:
    """The projection hash a stored body's content deserves: sha256 of the canonical JSON of
    everything but `OPERATIONAL_FIELDS` and the hash itself (None: the body cannot be
    canonicalized). A body whose ``projection_hash`` differs from this was edited behind the
    projector's back."""
    unsigned = {
        k: v for k, v in body.items() if k not in OPERATIONAL_FIELDS and k != "projection_hash"
    }
    try:
        return sha256_hex(encode_normalized(normalize(unsigned)))
    except CanonicalizationError:
        return None


def sync_hash(aggregate_type: str, doc_id: str) -> int:
    """The repair wheel's bucket key of a document: CRC32 of the UTF-8 of ``"<type>:<id>"``,
    an unsigned 32-bit int: what MySQL's ``CRC32(CONCAT(type, ':', id))`` computes."""
    return zlib.crc32(f"{aggregate_type}:{doc_id}".encode())


_REQUIRED_MAPPING_FIELDS = RESERVED_FIELDS | {"is_deleted"}
_MAX_EXTERNAL_VERSION = 2**63 - 1  # Elasticsearch external versions are non-negative longs
_AGGREGATE_TYPE = re.compile(r"[a-z][a-z0-9_]{0,62}")  # it becomes part of an index name
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")  # a MySQL table or column name


@dataclass(frozen=True, slots=True)
class Document:
    """A projected document, ready to be written with `source_revision` as its external version.

    `body` is the whole document as it is written (including `projection_schema_version`,
    `projection_hash`, `is_deleted` and, on a tombstone, ``tombstoned_at``) decoded from the
    canonical bytes, so ``body`` and ``to_json()`` always agree. Treat `body` as read-only.

    `reproducible` is True when the whole body follows from the truth (every `Projector.project`
    document, soft-deleted ones included); a hard-delete tombstone's ``tombstoned_at`` is the time
    it was written, so compare such a document with `matches` (projected fields), not ``==``.
    """

    doc_id: str
    source_revision: int
    body: dict[str, Any]
    projection_hash: str
    is_deleted: bool
    _json: bytes = field(repr=False, compare=False)
    reproducible: bool = True

    def to_json(self) -> bytes:
        """The canonical bytes of `body` (see `consumer.projection.canonical`)."""
        return self._json

    @property
    def projected(self) -> dict[str, Any]:
        """`body` without the operational fields: what the truth alone gives."""
        return projected_fields(self.body)

    @property
    def tombstoned_at(self) -> str | None:
        """The ``tombstoned_at`` field (None on a live document)."""
        value = self.body.get(TOMBSTONED_AT)
        return value if isinstance(value, str) else None

    def matches(self, source: Mapping[str, Any]) -> bool:
        """True when a stored ``_source`` is this document: byte for byte when `reproducible`;
        else equal projected fields, and every operational field of `body` present."""
        if self.reproducible:
            return dict(source) == self.body
        present = all(name in source for name in OPERATIONAL_FIELDS & set(self.body))
        return present and projected_fields(source) == self.projected


@dataclass(frozen=True, slots=True)
class Projector:
    """How to read and project one aggregate type.

    - `table`, `columns`: where the rows live and which columns to read: at least ``id``,
      ``revision`` and every column `build` reads. The truth port (`consumer.mysql.truth`) builds
      the queries from them (quoted identifiers, parameters); every row is read, soft-deleted
      rows included. Both are plain identifiers (``[A-Za-z_][A-Za-z0-9_]*``, at most 64).
    - `build(row)`: the type's own fields, including ``is_deleted`` (a `bool`), and none of
      `RESERVED_FIELDS`. It raises `PoisonMessage(ErrorCode.PROJECTION_ERROR, ...)` for a row it
      cannot project; `KeyError`, `TypeError` and `ValueError` from it are turned into that too.
      Any other exception is a bug: the pipeline retries the row, then dead-letters it as
      PROJECTION_ERROR too (see `consumer.errors`).
    - `mapping`: the index body (``{"settings": ..., "mappings": ...}``) for this type; its
      properties must cover `RESERVED_FIELDS` (``tombstoned_at`` as ``date``) and ``is_deleted``.
    - `deleted_at_column`: the column holding a soft delete's time (a DATETIME, naive values are
      UTC). A projected document with ``is_deleted: true`` gets it as ``tombstoned_at``; without
      it (None, or the row's value is NULL) a soft-deleted document has no ``tombstoned_at`` and
      the tombstone purge never removes it. It must be one of `columns` when set.

    Adding an aggregate type: a module whose ``projectors()`` returns it, named in
    ``[projection] modules`` (`consumer.projection.plugins`; docs/consumer.md)::

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

    def __post_init__(self) -> None:
        if not _AGGREGATE_TYPE.fullmatch(self.aggregate_type):
            raise ValueError(f"aggregate_type {self.aggregate_type!r}: want [a-z][a-z0-9_]*")
        if isinstance(self.schema_version, bool) or not isinstance(self.schema_version, int):
            raise ValueError("schema_version must be an int")
        if self.schema_version < 1:
            raise ValueError("schema_version must be >= 1")
        if not isinstance(self.table, str) or not _IDENTIFIER.fullmatch(self.table):
            raise ValueError(f"table {self.table!r}: want an identifier [A-Za-z_][A-Za-z0-9_]*")
        if not isinstance(self.columns, tuple):
            raise ValueError("columns must be a tuple of column names")
        bad = [c for c in self.columns if not isinstance(c, str) or not _IDENTIFIER.fullmatch(c)]
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
        clash = sorted(RESERVED_FIELDS & set(fields))
        if clash:
            raise _error(doc_id, f"build() returned reserved fields {clash}")
        if not isinstance(fields.get("is_deleted"), bool):
            raise _error(doc_id, "build() must return is_deleted as a bool")
        operational: dict[str, Any] = {}
        if fields["is_deleted"] and self.deleted_at_column is not None:
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
        unsigned = {
            **fields,
            "id": doc_id,
            "source_revision": revision,
            "projection_schema_version": self.schema_version,
        }
        try:
            normalized = normalize(unsigned)
            digest = sha256_hex(encode_normalized(normalized))
            # The hash covers the projected fields only; operational fields join the body after.
            body = {
                **normalized,
                "projection_hash": digest,
                SYNC_HASH: sync_hash(self.aggregate_type, doc_id),
                **(normalize(dict(operational)) if operational else {}),
            }
            data = encode_normalized(body)
        except CanonicalizationError as exc:
            raise _error(doc_id, str(exc)) from exc
        return Document(
            doc_id=doc_id,
            source_revision=revision,
            body=body,
            projection_hash=digest,
            is_deleted=bool(fields["is_deleted"]),
            _json=data,
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


def projected_fields(source: Mapping[str, Any]) -> dict[str, Any]:
    """A stored ``_source`` (or a `Document.body`) without its operational fields."""
    return {k: v for k, v in source.items() if k not in OPERATIONAL_FIELDS}


def format_timestamp(at: datetime) -> str:
    """`at` as ``tombstoned_at`` holds it: ISO-8601 UTC with milliseconds and ``Z``
    (Elasticsearch ``date`` precision), e.g. ``2026-11-30T12:00:00.123Z``. A naive `at` is
    taken as UTC (MySQL DATETIME columns hold UTC: the session time zone is ``+00:00``)."""
    utc = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


def _error(doc_id: str, message: str) -> PoisonMessage:
    return PoisonMessage(ErrorCode.PROJECTION_ERROR, f"{doc_id}: {message}")


def _doc_id(value: object) -> str:
    # The id is both the Elasticsearch _id and the body's `id`; canonical JSON would NFC the
    # latter, so a non-NFC id would make them differ. Refuse it instead.
    if not isinstance(value, str) or not value:
        raise PoisonMessage(
            ErrorCode.PROJECTION_ERROR, f"id must be a non-empty string, got {value!r}"
        )
    if unicodedata.normalize("NFC", value) != value:
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
