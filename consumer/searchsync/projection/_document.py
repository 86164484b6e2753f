"""A projected document. Its projected fields follow from the row and the schema version and give
``projection_hash``; its operational fields (`OPERATIONAL_FIELDS`: the tombstone time the purge
reads and the repair wheel's bucket key) are outside the hash."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, NamedTuple

from searchsync.errors import CanonicalizationError
from searchsync.projection.canonical import canonical_json
from searchsync.projection.column_forms import format_datetime

TOMBSTONED_AT: Final = "tombstoned_at"
"""When the document became a tombstone (ISO-8601 UTC, milliseconds): the row's ``deleted_at``,
or when a hard delete's tombstone was first written. Absent on live documents."""

SYNC_HASH: Final = "sync_hash"

OPERATIONAL_FIELDS: Final = frozenset({TOMBSTONED_AT, SYNC_HASH})
"""Fields of a stored document outside ``projection_hash`` and `Document.projected`."""


def content_hash(body: Mapping[str, Any]) -> str | None:
    """The ``projection_hash`` a stored body's content deserves (None: not canonicalizable); a
    body holding another was edited behind the projector's back."""
    unsigned = projected_fields(body)
    unsigned.pop("projection_hash", None)
    try:
        return hashlib.sha256(canonical_json(unsigned)).hexdigest()
    except CanonicalizationError:
        return None


def sync_hash(aggregate_type: str, doc_id: str) -> int:
    """The repair wheel's bucket key: MySQL's ``CRC32(CONCAT(type, ':', id))``."""
    return zlib.crc32(f"{aggregate_type}:{doc_id}".encode())


class Document(NamedTuple):
    """A projected document, written with `source_revision` as its external version.

    `body` (read-only) is the whole document as written; `encoded` its canonical bytes
    (`searchsync.projection.canonical`).
    `reproducible` is False for a hard-delete tombstone, whose ``tombstoned_at`` is when it was
    written: compare it with `matches`, not ``==``. A `NamedTuple` because it is built per
    document on every hot path.
    """

    doc_id: str
    source_revision: int
    body: dict[str, Any]
    projection_hash: str
    is_deleted: bool
    encoded: bytes
    reproducible: bool = True

    @property
    def projected(self) -> dict[str, Any]:
        """`body` without the operational fields: what the truth alone gives."""
        return projected_fields(self.body)

    def matches(self, source: Mapping[str, Any]) -> bool:
        """A stored ``_source`` is this document: all of it when `reproducible`, else equal
        projected fields and every operational field of `body` present."""
        if self.reproducible:
            return dict(source) == self.body
        present = all(name in source for name in OPERATIONAL_FIELDS & set(self.body))
        return present and projected_fields(source) == self.projected


def projected_fields(source: Mapping[str, Any]) -> dict[str, Any]:
    """A stored ``_source`` (or a `Document.body`) without its operational fields."""
    return {k: v for k, v in source.items() if k not in OPERATIONAL_FIELDS}


def format_timestamp(at: datetime) -> str:
    """`at` as ``tombstoned_at`` holds it (``2026-11-30T12:00:00.123Z``); naive means UTC."""
    return format_datetime(at, "milliseconds")
