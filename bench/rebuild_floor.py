"""The floor of a backfill with the fixed libraries: the same keyset scan (aiomysql,
rows as tuples), the least a projection does (`bench.floor.encode_rows`: canonical JSON twice and
SHA-256, no validation), 500 index actions per ``bulk`` with external versions, one in flight,
the next chunk read ahead as the rebuild's `Backfill` does. None of searchsync's own code: its
docs/s against the raw bulk's is the best ratio any backfill on these libraries could reach on
this box, to set beside the rebuild's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final

import aiomysql
from elasticsearch import AsyncElasticsearch

from bench.floor import BATCH, COLUMNS, RowTuple, bulk_docs, encode_rows

_CHUNK: Final = 5_000
_READ_AHEAD: Final = 2

Chunk = list[tuple[str, int, bytes]]


Scan = Callable[[aiomysql.Pool, "asyncio.Queue[Chunk | None]", int], Awaitable[None]]
"""A floor's reader: (pool, queue of encoded chunks, schema version); it puts each chunk."""


async def _read(
    scan: Scan, pool: aiomysql.Pool, ready: asyncio.Queue[Chunk | None], schema_version: int
) -> None:
    try:
        await scan(pool, ready, schema_version)
    finally:
        await ready.put(None)  # the end, or a failure (raised by `await reader`)


async def _scan(
    pool: aiomysql.Pool, ready: asyncio.Queue[Chunk | None], schema_version: int
) -> None:
    after = ""
    async with pool.acquire() as conn:
        while True:
            async with conn.cursor() as cur:  # tuples
                await cur.execute(
                    f"SELECT {COLUMNS} FROM wiki_page WHERE id > %s ORDER BY id LIMIT %s",
                    (after, _CHUNK),
                )
                rows: list[RowTuple] = list(await cur.fetchall())
            if not rows:
                return
            after = str(rows[-1][0])
            docs: Chunk = []
            for s in range(0, len(rows), BATCH):  # a turn of the loop per bulk's worth
                docs.extend(encode_rows(rows[s : s + BATCH], schema_version))
                await asyncio.sleep(0)
            await ready.put(docs)


async def floor_backfill(
    pool: aiomysql.Pool,
    es: AsyncElasticsearch,
    index: str,
    schema_version: int,
    scan: Scan | None = None,
) -> tuple[int, float, int]:
    """Fill the existing `index` with the whole wiki_page table (or what `scan` reads), its
    chunks bulked as they come, `_READ_AHEAD` ahead: (documents, seconds, item errors)."""
    ready: asyncio.Queue[Chunk | None] = asyncio.Queue(maxsize=_READ_AHEAD)
    reader = asyncio.ensure_future(_read(scan or _scan, pool, ready, schema_version))
    written = errors = 0
    t0 = time.monotonic()
    try:
        while (docs := await ready.get()) is not None:
            errors += await bulk_docs(es, index, docs)
            written += len(docs)
        await reader
    finally:
        reader.cancel()
    return written, time.monotonic() - t0, errors
