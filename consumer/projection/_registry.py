"""Projectors and the registry that finds one per aggregate type (invariant 6).

A projector turns one MySQL row into one complete search document. The consumer, the rebuild
and the repair job all get their projector from a `ProjectorRegistry`, so there is exactly one
way to build a document of a given type and `projection_schema_version`.
"""

from __future__ import annotations

import re
import unicodedata
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
    "Document",
    "Projector",
    "ProjectorRegistry",
    "Row",
    "content_hash",
    "sync_hash",
]

Row = Mapping[str, Any]
"""One row as aiomysql's DictCursor returns it (JSON columns as `str`, DATETIME as `datetime`)."""

RESERVED_FIELDS = frozenset(
    {"id", "source_revision", "projection_schema_version", "projection_hash", "sync_hash"}
)
"""Fields `Projector.project` sets itself; a `build` function must not return them."""

OPERATIONAL_FIELDS = frozenset({"projection_hash", "sync_hash"})
"""Body fields outside what `projection_hash` covers (the hash itself, and operational fields
such as the repair wheel's bucket key; docs/design.md, "Repair")."""


def content_hash(body: Mapping[str, Any]) -> str | None:
    """The projection hash a stored body's content deserves: sha256 of the canonical JSON of
    everything but `OPERATIONAL_FIELDS` (None: the body cannot be canonicalized). A body whose
    ``projection_hash`` differs from this was edited behind the projector's back."""
    try:
        return sha256_hex(
            encode_normalized(
                normalize({k: v for k, v in body.items() if k not in OPERATIONAL_FIELDS})
            )
        )
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

    `body` is the whole document (including `projection_schema_version`, `projection_hash` and
    `is_deleted`) decoded from the canonical bytes, so ``body`` and ``to_json()`` always agree.
    Treat `body` as read-only.
    """

    doc_id: str
    source_revision: int
    body: dict[str, Any]
    projection_hash: str
    is_deleted: bool
    _json: bytes = field(repr=False, compare=False)

    def to_json(self) -> bytes:
        """The canonical bytes of `body` (see `consumer.projection.canonical`)."""
        return self._json


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
      properties must cover `RESERVED_FIELDS` and ``is_deleted``.

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
        return self._seal(doc_id, revision, fields)

    def tombstone(self, aggregate_id: str, revision: int) -> Document:
        """The document for a row that no longer exists (hard delete) at `revision`.

        It carries only ``id``, ``source_revision``, ``projection_schema_version``,
        ``projection_hash`` and ``is_deleted: true``: enough to hold the version in
        Elasticsearch so that a late upsert cannot resurrect the row (invariant 4).
        """
        doc_id = _doc_id(aggregate_id)
        return self._seal(doc_id, _revision(revision), {"is_deleted": True})

    def _seal(self, doc_id: str, revision: int, fields: Mapping[str, Any]) -> Document:
        unsigned = {
            **fields,
            "id": doc_id,
            "source_revision": revision,
            "projection_schema_version": self.schema_version,
        }
        try:
            normalized = normalize(unsigned)
            digest = sha256_hex(encode_normalized(normalized))
            # sync_hash is operational: outside the hash, so adding it changed no hash.
            body = {
                **normalized,
                "projection_hash": digest,
                "sync_hash": sync_hash(self.aggregate_type, doc_id),
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
