"""A projected document and the fields every document has besides its projected ones.

A document has projected fields (a function of the row and the schema version: they give
``projection_hash``) and operational fields (`OPERATIONAL_FIELDS`, outside the hash): the time a
document became a tombstone, which the tombstone purge reads (docs/design.md, "Tombstones and
their purge"), and the repair wheel's bucket key.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple

from searchsync.projection.canonical import (
    CanonicalizationError,
    encode_normalized,
    normalize,
    sha256_hex,
)

__all__ = [
    "OPERATIONAL_FIELDS",
    "SYNC_HASH",
    "TOMBSTONED_AT",
    "Document",
    "content_hash",
    "format_timestamp",
    "projected_fields",
    "sync_hash",
]

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


class Document(NamedTuple):
    """A projected document, ready to be written with `source_revision` as its external version.

    `body` is the whole document as it is written (including `projection_schema_version`,
    `projection_hash`, `is_deleted` and, on a tombstone, ``tombstoned_at``) decoded from the
    canonical bytes, so ``body`` and ``to_json()`` always agree. Treat `body` as read-only.

    `reproducible` is True when the whole body follows from the truth (every `Projector.project`
    document, soft-deleted ones included); a hard-delete tombstone's ``tombstoned_at`` is the time
    it was written, so compare such a document with `matches` (projected fields), not ``==``.

    A `NamedTuple` (one per document on every hot path; it is built in a third of the time a
    frozen dataclass takes); `encoded` holds the bytes `to_json` returns.
    """

    doc_id: str
    source_revision: int
    body: dict[str, Any]
    projection_hash: str
    is_deleted: bool
    encoded: bytes
    reproducible: bool = True

    def to_json(self) -> bytes:
        """The canonical bytes of `body` (see `searchsync.projection.canonical`)."""
        return self.encoded

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
