"""How the wheel reads a span of buckets: adjacent buckets merged into key ranges, each read once
on each side (at the same time) in adaptive pages resuming after a `BucketCursor`. Every entry
goes to the bucket of its id's key; a document whose stored ``sync_hash`` is not that key is also
handed back as *misplaced*. Every range is read to its end before anything is returned; a failure
on either side cancels the other and propagates (invariant 13).

The buckets are stable: bucket `b` of `m` is the ``sync_hash`` range
``[ceil(b * 2^32 / m), ceil((b + 1) * 2^32 / m))``, so a key `h` is in bucket ``h * m // 2^32``.
A change of `m` or of `WHEEL_CANONICALIZATION_VERSION` starts a new epoch.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Final, TypeVar

from searchsync.mysql.truth import Truth
from searchsync.mysql.truth_buckets import TruthEntry, entry_of_row
from searchsync.ops.chunks import ChunkController
from searchsync.ops.repair.load import Limits
from searchsync.ops.repair.model import IndexEntry, entry_of
from searchsync.projection import Projector
from searchsync.search.port import SearchEngine
from searchsync.types import HASH_SPACE, BucketCursor

_E = TypeVar("_E", TruthEntry, IndexEntry)
Page = Callable[[int, int, BucketCursor | None, int], Awaitable[list[_E]]]

WHEEL_CANONICALIZATION_VERSION: Final = 1
_MAX_BUCKETS: Final = 1 << 20


def _check(m: int) -> None:
    if not 1 <= m <= _MAX_BUCKETS:
        raise ValueError(f"bucket count must be in 1..{_MAX_BUCKETS}, got {m}")


def key_of_id(aggregate_type: str) -> Callable[[str], int]:
    """``id -> sync_hash(aggregate_type, id)``, the ``"<type>:"`` prefix's CRC computed once."""
    seed = zlib.crc32(f"{aggregate_type}:".encode())
    return lambda aggregate_id: zlib.crc32(aggregate_id.encode(), seed)


def bucket_of_id(aggregate_type: str, m: int) -> Callable[[str], int]:
    """``id -> the bucket among `m` of its key``, for many ids."""
    _check(m)
    key = key_of_id(aggregate_type)
    return lambda aggregate_id: key(aggregate_id) * m // HASH_SPACE


def bucket_range(bucket: int, m: int) -> tuple[int, int]:
    """The half-open key range ``[lo, hi)`` of `bucket` among `m`."""
    _check(m)
    if not 0 <= bucket < m:
        raise ValueError(f"bucket {bucket} outside 0..{m - 1}")
    return -(-bucket * HASH_SPACE // m), -(-(bucket + 1) * HASH_SPACE // m)


@dataclass(slots=True)
class BucketEntries:
    rows: dict[str, TruthEntry] = field(default_factory=dict)
    docs: dict[str, IndexEntry] = field(default_factory=dict)


def key_ranges(buckets: Collection[int], m: int) -> list[tuple[int, int]]:
    """The half-open key ranges covering `buckets` of `m`, adjacent buckets merged."""
    out: list[tuple[int, int]] = []
    for b in sorted(set(buckets)):
        lo, hi = bucket_range(b, m)
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


@dataclass(slots=True)
class SpanReader:
    """Reads spans; each kind of read (light rows, light documents, whole documents) takes its
    page sizes from its own controller, kept across ranges. `purged_before` gives the cutoff of
    `TruthEntry.purged` (None: none), asked again for every read of rows."""

    truth: Truth
    index: SearchEngine
    limits: Limits
    truth_chunks: ChunkController
    index_chunks: ChunkController
    content_chunks: ChunkController
    purged_before: Callable[[], datetime | None] = lambda: None

    async def read(
        self,
        projector: Projector,
        alias: str,
        m: int,
        buckets: Sequence[int],
        content: Collection[int],
        misplaced: dict[str, IndexEntry] | None = None,
    ) -> dict[int, BucketEntries]:
        """The complete entries of each of `buckets` (content for those in `content`); the
        documents whose ``sync_hash`` is not their id's key go into `misplaced` too."""
        out = {b: BucketEntries() for b in buckets}
        light = [b for b in buckets if b not in content]
        heavy = [b for b in buckets if b in content]
        bucket = bucket_of_id(projector.aggregate_type, m)
        key = key_of_id(projector.aggregate_type)
        off_key = {} if misplaced is None else misplaced

        async def rows(lo: int, hi: int, after: BucketCursor | None, n: int) -> list[TruthEntry]:
            found = await self.truth.bucket_page(
                projector, lo, hi, after, n, content=False, purged_before=self.purged_before()
            )
            await self.limits.mysql_rows.take(len(found))
            return found

        async def docs(
            content: bool, lo: int, hi: int, after: BucketCursor | None, n: int
        ) -> list[IndexEntry]:
            await self.limits.es_requests.take(1)
            page = await self.index.bucket_page(alias, lo, hi, after, n, content=content)
            found = [entry_of(d, content=content) for d in page]
            off_key.update((d.id, d) for d in found if d.sync_hash != key(d.id))
            return found

        async def scan(
            of: Collection[int],
            page: Page[_E],
            chunks: ChunkController,
            into: Mapping[int, dict[str, _E]],
        ) -> None:
            for lo, hi in key_ranges(of, m):
                for e in await _pages(page, lo, hi, chunks, key):
                    entries = into.get(bucket(e.id))
                    if entries is not None:
                        entries[e.id] = e

        async def truth() -> None:
            await scan(buckets, rows, self.truth_chunks, {b: e.rows for b, e in out.items()})
            # the rows of the content buckets again by id with the projector's columns; a row
            # gone in between is gone (the settle re-check decides)
            if row_ids := sorted({i for b in heavy for i in out[b].rows}):
                found = await self._truth_by_ids(projector, row_ids)
                await self.limits.mysql_rows.take(len(found))
                for b in heavy:
                    out[b].rows = {i: found[i] for i in out[b].rows if i in found}

        async with asyncio.TaskGroup() as group:
            group.create_task(truth())
            for of, whole, chunks in (
                (light, False, self.index_chunks),
                (heavy, True, self.content_chunks),  # every document with its body
            ):
                if of:
                    into = {b: out[b].docs for b in of}
                    group.create_task(scan(of, partial(docs, whole), chunks, into))
        return out

    async def by_ids(
        self, projector: Projector, alias: str, ids: Sequence[str]
    ) -> tuple[dict[str, TruthEntry], dict[str, IndexEntry]]:
        """The rows and documents of `ids`, read again by id with content (the settle re-check)."""
        rows = await self._truth_by_ids(projector, ids)
        await self.limits.mysql_rows.take(len(ids))
        await self.limits.es_requests.take(1)
        docs = await self.index.get_documents(alias, ids)
        return rows, {i: entry_of(d, content=True) for i, d in docs.items() if d is not None}

    async def _truth_by_ids(
        self, projector: Projector, ids: Sequence[str]
    ) -> dict[str, TruthEntry]:
        before = self.purged_before()
        rows = await self.truth.rows_by_id(projector, ids, primary=True)
        return {
            i: entry_of_row(r, content=True, projector=projector, purged_before=before)
            for i, r in rows.items()
        }


async def _pages(
    page: Page[_E], lo: int, hi: int, chunks: ChunkController, key: Callable[[str], int]
) -> list[_E]:
    """Every entry of the key range ``[lo, hi)``, in adaptive pages, each after the last entry
    of the one before (its `BucketCursor`: `key` of its id, and the id)."""
    out: list[_E] = []
    after: BucketCursor | None = None
    while True:
        size = chunks.current
        t0 = time.monotonic()
        found = await page(lo, hi, after, size)
        chunks.observe(time.monotonic() - t0)
        out.extend(found)
        if len(found) < size:
            return out
        after = (key(found[-1].id), found[-1].id)
