"""Stable buckets of the repair wheel: bucket `b` of `m` is the ``sync_hash`` range
``[ceil(b * 2^32 / m), ceil((b + 1) * 2^32 / m))``, so ``bucket_of(h, m) = h * m // 2^32``.
A change of `m` or of `WHEEL_CANONICALIZATION_VERSION` starts a new epoch."""

from __future__ import annotations

import unicodedata
import zlib
from collections.abc import Callable
from decimal import Decimal
from typing import Final

from searchsync.projection import sync_hash

HASH_SPACE: Final = 2**32
WHEEL_CANONICALIZATION_VERSION: Final = 1
_MAX_BUCKETS: Final = 1 << 20


def key_hash(aggregate_type: str, aggregate_id: str) -> int:
    """The bucket key of one aggregate: the same value the document's ``sync_hash`` holds."""
    return sync_hash(aggregate_type, aggregate_id)


def _check(m: int) -> None:
    if not 1 <= m <= _MAX_BUCKETS:
        raise ValueError(f"bucket count must be in 1..{_MAX_BUCKETS}, got {m}")


def bucket_of(hash_value: int, m: int) -> int:
    """The bucket of a 32-bit key among `m`."""
    _check(m)
    if not 0 <= hash_value < HASH_SPACE:
        raise ValueError(f"hash {hash_value} outside 0..2^32-1")
    return hash_value * m // HASH_SPACE


def key_of_id(aggregate_type: str) -> Callable[[str], int]:
    """``id -> key_hash(aggregate_type, id)``, the ``"<type>:"`` prefix's CRC computed once."""
    seed = zlib.crc32(f"{aggregate_type}:".encode())
    return lambda aggregate_id: zlib.crc32(aggregate_id.encode(), seed)


def bucket_of_id(aggregate_type: str, m: int) -> Callable[[str], int]:
    """``id -> bucket_of(key_hash(aggregate_type, id), m)``, for many ids."""
    _check(m)
    seed = zlib.crc32(f"{aggregate_type}:".encode())
    return lambda aggregate_id: zlib.crc32(aggregate_id.encode(), seed) * m // HASH_SPACE


def bucket_range(bucket: int, m: int) -> tuple[int, int]:
    """The half-open key range ``[lo, hi)`` of `bucket` among `m`."""
    _check(m)
    if not 0 <= bucket < m:
        raise ValueError(f"bucket {bucket} outside 0..{m - 1}")
    return -(-bucket * HASH_SPACE // m), -(-(bucket + 1) * HASH_SPACE // m)


def canonical_fields(*values: str | int | Decimal | None, scale: int = 6) -> bytes:
    """The versioned canonical encoding of values: each ``0x00`` (NULL) or ``0x01 | type |
    4-byte big-endian length | bytes``; strings NFC, decimals at `scale` (refused if that would
    round), integers in decimal."""
    out = bytearray()
    for value in values:
        if value is None:
            out += b"\x00"
            continue
        if isinstance(value, bool):
            raise TypeError("booleans have no canonical form here; use 0/1")
        if isinstance(value, str):
            kind, data = b"s", unicodedata.normalize("NFC", value).encode("utf-8")
        elif isinstance(value, int):
            kind, data = b"i", str(value).encode("ascii")
        elif isinstance(value, Decimal):
            fixed = value.quantize(Decimal(1).scaleb(-scale))
            if fixed != value:
                raise ValueError(f"{value} does not fit scale {scale} without rounding")
            kind, data = b"d", format(fixed, "f").encode("ascii")
        else:
            raise TypeError(f"no canonical form for {type(value).__name__}")
        out += b"\x01" + kind + len(data).to_bytes(4, "big") + data
    return bytes(out)
