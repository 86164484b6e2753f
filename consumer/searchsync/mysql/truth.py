"""The truth port: the current rows of an aggregate type, and the writer's revision floors.

The consumer never trusts an event's content; it re-reads the truth. `Truth` is the one port the
pipeline, the rebuild and the repair job read it through; `MysqlTruth` implements it on aiomysql.
It says what to read, never how: no caller hands it SQL.

- `rows_by_id(projector, ids)`: the rows of those ids from the projector's `table`, with its
  `columns`, soft-deleted rows included, keyed by ``id``. A missing id is simply absent; the
  caller decides what a missing row means.
- Every row `rows_by_id`, `scan` and `bucket_page(content=True)` return carries the projector's
  children and lookups (``row[child.name]``, ``row[lookup.name]``), read in the same transaction
  with one ``IN (...)`` query per child or lookup table per batch, in a deterministic order
  (`searchsync.mysql.truth_relations`).
- `revision_floors(aggregate_type, ids)`: the revision the writer recorded when it hard-deleted
  each id (table ``search_revision_floor``); ids without a floor are absent.
- `scan(projector, after_id, limit)`: keyset pagination over the whole table: at most `limit`
  rows with ``id > after_id`` (all rows when `after_id` is None), ordered by id. Pass the last
  id returned to read the next page; an empty page is the end. Never OFFSET: a page costs the
  same wherever it starts. The order is the database's (its collation).
- `floor_page(aggregate_type, after_id, limit)`: the same keyset walk over the revision floors.
- `count(projector)`: the rows of the table.
- `bucket_page(projector, lo, hi, after, limit, content=...)`: the repair wheel's read of one
  bucket key range (`searchsync.mysql.truth_buckets`): light entries, or whole rows with
  `content`. Pages resume after the `BucketCursor` of the last entry returned.

The SQL is built here, from identifiers `Projector` validated, quoted, with every value a
parameter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final, Protocol

import aiomysql

from searchsync.mysql.pool import expand_in, quote_identifier, transaction, translate_errors
from searchsync.mysql.truth_buckets import TruthEntry, bucket_page
from searchsync.mysql.truth_relations import Packing, read_relations
from searchsync.projection._registry import Projector, Row
from searchsync.types import BucketCursor

__all__ = ["DEFAULT_BATCH_SIZE", "MysqlTruth", "Row", "Truth", "TruthEntry"]

DEFAULT_BATCH_SIZE: Final = 500
_SCAN_PIECE: Final = 64
"""Rows of a scan parsed between two turns of the event loop (a few milliseconds of CPU)."""
_FLOOR_SQL: Final = (
    "SELECT `aggregate_id`, `revision` FROM `search_revision_floor`"
    " WHERE `aggregate_type` = %s AND `aggregate_id` IN %s"
)


class Truth(Protocol):
    """Reads current rows and revision floors (the module docstring says what each returns).

    `primary=True` asks for a read that cannot lag (the primary, not a replica): the pipeline
    uses it to re-read a row that is older than its event, the repair to confirm a finding.
    """

    async def rows_by_id(
        self, projector: Projector, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]: ...

    async def revision_floors(
        self, aggregate_type: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, int]: ...

    async def scan(self, projector: Projector, after_id: str | None, limit: int) -> list[Row]: ...

    async def floor_page(
        self, aggregate_type: str, after_id: str | None, limit: int
    ) -> list[tuple[str, int]]: ...

    async def count(self, projector: Projector) -> int: ...

    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after: BucketCursor | None,
        limit: int,
        *,
        content: bool,
    ) -> list[TruthEntry]: ...


class MysqlTruth:
    """`Truth` on aiomysql pools: `pool` for ordinary reads, `primary_pool` for ``primary=True``
    (the same pool when there is no replica). `sync_hash_column` reads bucket pages by the
    optional ``sync_hash`` column; `id_prefix` limits them to ids starting with it (a partial
    repair; tests).

    Ids are de-duplicated and read in chunks of at most `batch_size` (one query each, all in one
    short transaction). Unreachable or lost connections raise
    `TransientError(ErrorCode.MYSQL_UNAVAILABLE)`; SQL errors pass through unchanged (a bug, not
    an outage).
    """

    def __init__(
        self,
        pool: aiomysql.Pool,
        primary_pool: aiomysql.Pool | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sync_hash_column: bool = False,
        id_prefix: str = "",
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._pool = pool
        self._primary_pool = primary_pool if primary_pool is not None else pool
        self._batch_size = batch_size
        self._sync_hash_column = sync_hash_column
        self._id_prefix = id_prefix
        self._packing = Packing()

    async def rows_by_id(
        self, projector: Projector, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        select = _select(projector)
        rows = await self._by_chunks(
            f"{select} WHERE `id` IN %s",
            (),
            ids,
            primary=primary,
            doing=f"read {projector.table}",
            relate=projector,
        )
        return {str(row["id"]): row for row in rows}

    async def revision_floors(
        self, aggregate_type: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, int]:
        rows = await self._by_chunks(
            _FLOOR_SQL,
            (aggregate_type,),
            ids,
            primary=primary,
            doing="read search_revision_floor",
        )
        return {str(row["aggregate_id"]): int(row["revision"]) for row in rows}

    async def scan(self, projector: Projector, after_id: str | None, limit: int) -> list[Row]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        select = _select(projector)
        args: tuple[Any, ...]
        if after_id is None:
            sql, args = f"{select} ORDER BY `id` LIMIT %s", (limit,)
        else:
            sql, args = f"{select} WHERE `id` > %s ORDER BY `id` LIMIT %s", (after_id, limit)
        rows: list[dict[str, Any]] = []
        async with transaction(self._pool) as conn:
            with translate_errors(f"scan {projector.table}"):
                # Unbuffered, in pieces, a turn of the event loop between two: parsing a page of
                # thousands of rows takes tens of milliseconds of CPU (aiomysql parses in
                # Python), which would otherwise hold the loop while whole buffers of the
                # result are parsed, and delay every other task's I/O (a bulk's answer).
                async with conn.cursor(aiomysql.SSDictCursor) as cur:
                    await cur.execute(sql, args)
                    while piece := await cur.fetchmany(_SCAN_PIECE):
                        rows.extend(piece)
                        await asyncio.sleep(0)
            await read_relations(conn, projector, rows, self._packing)
        return list(rows)

    async def floor_page(
        self, aggregate_type: str, after_id: str | None, limit: int
    ) -> list[tuple[str, int]]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        async with transaction(self._pool) as conn:
            with translate_errors("scan search_revision_floor"):
                async with conn.cursor() as cur:
                    await cur.execute(
                        "SELECT aggregate_id, revision FROM search_revision_floor"
                        " WHERE aggregate_type = %s AND aggregate_id > %s"
                        " ORDER BY aggregate_id LIMIT %s",
                        (aggregate_type, after_id or "", limit),
                    )
                    fetched = await cur.fetchall()
        return [(str(r[0]), int(r[1])) for r in fetched]

    async def count(self, projector: Projector) -> int:
        async with transaction(self._pool) as conn:
            with translate_errors(f"count {projector.table}"):
                async with conn.cursor() as cur:
                    await cur.execute(f"SELECT COUNT(*) FROM {quote_identifier(projector.table)}")
                    (total,) = await cur.fetchone()
        return int(total)

    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after: BucketCursor | None,
        limit: int,
        *,
        content: bool,
    ) -> list[TruthEntry]:
        return await bucket_page(
            self._pool,
            projector,
            lo,
            hi,
            after,
            limit,
            content=content,
            sync_hash_column=self._sync_hash_column,
            id_prefix=self._id_prefix,
            packing=self._packing,
        )

    async def _by_chunks(
        self,
        sql: str,
        leading: tuple[Any, ...],
        ids: Sequence[str],
        *,
        primary: bool,
        doing: str,
        relate: Projector | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of `sql` for `ids`, a chunk at a time; with `relate`, each chunk's rows get
        that projector's children and lookups."""
        unique = _unique(ids)
        if not unique:
            return []
        pool = self._primary_pool if primary else self._pool
        rows: list[dict[str, Any]] = []
        async with transaction(pool) as conn:
            for start in range(0, len(unique), self._batch_size):
                chunk = tuple(unique[start : start + self._batch_size])
                with translate_errors(doing):
                    async with conn.cursor(aiomysql.DictCursor) as cur:
                        await cur.execute(expand_in(sql, len(chunk)), leading + chunk)
                        fetched: list[dict[str, Any]] = list(await cur.fetchall())
                if relate is not None:
                    await read_relations(conn, relate, fetched, self._packing)
                rows.extend(fetched)
        return rows


def _select(projector: Projector) -> str:
    columns = ", ".join(quote_identifier(c) for c in projector.columns)
    return f"SELECT {columns} FROM {quote_identifier(projector.table)}"


def _unique(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        raise TypeError("ids must be a sequence of ids, not one string")
    return list(dict.fromkeys(ids))
