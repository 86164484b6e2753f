"""How the wheel reads a span of buckets (docs/design.md, "Repair", "Cost").

A span is a few buckets scanned together (`Wheel` forms them from consecutive picks). The
reader merges adjacent buckets of the span into key ranges and reads each range once on each
side, MySQL and Elasticsearch at the same time, in adaptive pages keyset by id (the page sizes
carry over from range to range). Every entry goes to the bucket of its key. For the buckets whose
content is checked, the rows and documents are then read again by the ids the range read found
(on MySQL: the projector's columns, by primary key; on Elasticsearch: the whole ``_source``,
one ``mget``), so a range is read once, light, whatever its content share.

Every range is read to its end before anything is returned; a failure on either side cancels the
other and propagates: the caller counts none of the span's buckets (invariant 13).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from consumer.ops.chunks import ChunkController
from consumer.ops.repair.buckets import bucket_of_id, bucket_range
from consumer.ops.repair.load import Limits
from consumer.ops.repair.model import IndexEntry, TruthEntry
from consumer.ops.repair.sides import IndexSide, TruthSide
from consumer.projection import Projector

__all__ = ["BucketEntries", "SpanReader", "key_ranges"]

_E = TypeVar("_E", TruthEntry, IndexEntry)


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


class SpanReader:
    def __init__(
        self,
        truth: TruthSide,
        index: IndexSide,
        limits: Limits,
        truth_chunks: ChunkController,
        index_chunks: ChunkController,
    ) -> None:
        """The page sizes of each side come from its own controller, kept across ranges."""
        self._truth = truth
        self._index = index
        self._limits = limits
        self._truth_chunks = truth_chunks
        self._index_chunks = index_chunks

    async def read(
        self,
        projector: Projector,
        alias: str,
        m: int,
        buckets: Sequence[int],
        content: Collection[int],
    ) -> dict[int, BucketEntries]:
        """The complete entries of each of `buckets` (content for those in `content`)."""
        out = {b: BucketEntries() for b in buckets}
        ranges = key_ranges(buckets, m)
        bucket = bucket_of_id(projector.aggregate_type, m)

        async def truth() -> None:
            for lo, hi in ranges:
                for e in await self._read_truth(projector, lo, hi):
                    b = out.get(bucket(e.id))
                    if b is not None:
                        b.rows[e.id] = e

        async def index() -> None:
            for lo, hi in ranges:
                for d in await self._read_index(alias, lo, hi):
                    b = out.get(bucket(d.id))
                    if b is not None:
                        b.docs[d.id] = d

        async with asyncio.TaskGroup() as group:
            group.create_task(truth())
            group.create_task(index())
        heavy = [b for b in buckets if b in content]
        if heavy:
            await self._content(projector, alias, [out[b] for b in heavy])
        return out

    async def _content(
        self, projector: Projector, alias: str, entries: Sequence[BucketEntries]
    ) -> None:
        row_ids = sorted({i for e in entries for i in e.rows})
        doc_ids = sorted({i for e in entries for i in e.docs})

        async def truth() -> dict[str, TruthEntry]:
            if not row_ids:
                return {}
            found = await self._truth.by_ids(projector, row_ids)
            await self._limits.mysql_rows.take(len(found))
            return found

        async def index() -> dict[str, IndexEntry]:
            if not doc_ids:
                return {}
            await self._limits.es_requests.take(1)
            return await self._index.by_ids(alias, doc_ids)

        async with asyncio.TaskGroup() as group:
            rows_task = group.create_task(truth())
            docs_task = group.create_task(index())
        rows, docs = rows_task.result(), docs_task.result()
        # a row or document gone between the two reads is gone: the settle re-check decides
        for e in entries:
            e.rows = {i: rows[i] for i in e.rows if i in rows}
            e.docs = {i: docs[i] for i in e.docs if i in docs}

    async def _read_truth(self, projector: Projector, lo: int, hi: int) -> list[TruthEntry]:
        async def page(after: str | None, n: int) -> list[TruthEntry]:
            found = await self._truth.bucket_page(projector, lo, hi, after, n, content=False)
            await self._limits.mysql_rows.take(len(found))
            return found

        return await _pages(page, self._truth_chunks)

    async def _read_index(self, alias: str, lo: int, hi: int) -> list[IndexEntry]:
        async def page(after: str | None, n: int) -> list[IndexEntry]:
            await self._limits.es_requests.take(1)
            return await self._index.bucket_page(alias, lo, hi, after, n, content=False)

        return await _pages(page, self._index_chunks)


async def _pages(
    page: Callable[[str | None, int], Awaitable[list[_E]]], chunks: ChunkController
) -> list[_E]:
    """Every entry of a key range, keyset by id in adaptive pages, to the end."""
    out: list[_E] = []
    after: str | None = None
    while True:
        size = chunks.current
        t0 = time.monotonic()
        found = await page(after, size)
        chunks.observe(time.monotonic() - t0)
        out.extend(found)
        if len(found) < size:
            return out
        after = found[-1].id
