"""Stable buckets of the repair wheel: bucket `b` of `m` is the ``sync_hash`` range
``[ceil(b * 2^32 / m), ceil((b + 1) * 2^32 / m))``, so ``bucket_of(h, m) = h * m // 2^32``.
A change of `m` or of `WHEEL_CANONICALIZATION_VERSION` starts a new epoch."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Final

from searchsync.projection import sync_hash
from searchsync.types import HASH_SPACE

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
