"""The truth port: the consumer never trusts an event's content, it re-reads the current rows (with
their children and lookups, `truth_relations`) and the writer's revision floors through `Truth`.
Callers say what to read, never how: SQL is built here from validated, quoted identifiers, every
value a parameter."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from functools import partial
from typing import Any, Final, Protocol

import aiomysql

from searchsync.mysql.column_types import ColumnTypes
from searchsync.mysql.key_scope import KeyScope, scope_sql, where_clause
from searchsync.mysql.keys import DataTypes, cursor_param, key_params
from searchsync.mysql.pool import (
    expand_in,
    fetch_all,
    quote_identifier,
    transaction,
    transaction_cursor,
    translate_errors,
)
from searchsync.mysql.soft_deletes import SoftDeleteState
from searchsync.mysql.truth_buckets import TruthEntry, bucket_page
from searchsync.mysql.truth_relations import Packing, read_relations, read_rows
from searchsync.projection._registry import Projector, Row
from searchsync.types import BucketCursor

DEFAULT_BATCH_SIZE: Final = 500
_SCAN_PIECE: Final = 64
"""Rows of a scan parsed between two turns of the event loop (a few milliseconds of CPU)."""
_FLOOR_SQL: Final = (
    "SELECT `aggregate_id`, `revision` FROM `search_revision_floor`"
    " WHERE `aggregate_type` = %s AND `aggregate_id` IN %s"
)


class Truth(Protocol):
    """Reads of current rows and revision floors. Rows carry the projector's children and lookups
    (``row[child.name]``); missing ids are absent. `primary=True` reads where nothing lags (the
    pipeline re-reading a row older than its event, the repair confirming a finding)."""

    async def rows_by_id(
        self, projector: Projector, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        """The rows of `ids` (soft-deleted ones included), by id."""

    async def revision_floors(
        self, aggregate_type: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, int]:
        """The revision the writer recorded when it hard-deleted each id."""

    async def scan(
        self,
        projector: Projector,
        after_id: str | None,
        limit: int,
        *,
        scope: KeyScope | None = None,
    ) -> list[Row]:
        """Keyset page: at most `limit` rows with ``id > after_id`` (from the start when None),
        within `scope` (an initial load's part), by id in the database's order (numeric for an
        integer key, else the collation's); empty at the end. Never OFFSET."""

    async def floor_page(
        self, aggregate_type: str, after_id: str | None, limit: int
    ) -> list[tuple[str, int]]:
        """The same keyset walk over the revision floors: (id, revision) pairs."""

    async def count(self, projector: Projector, scope: KeyScope | None = None) -> int: ...

    async def split_keys(self, projector: Projector, parts: int, where: str | None) -> list[str]:
        """``parts - 1`` ascending keys that cut the rows satisfying `where` into `parts` key
        ranges of about equal size (`key_scope.ranges`); repeated when there are too few rows."""

    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after: BucketCursor | None,
        limit: int,
        *,
        content: bool,
        purged_before: datetime | None = None,
    ) -> list[TruthEntry]:
        """The repair wheel's page of bucket keys ``[lo, hi)`` after `after` (`truth_buckets`):
        light entries, or whole rows with `content`; an entry soft-deleted before
        `purged_before` (aware; None: none) is `TruthEntry.purged`."""


class MysqlTruth:
    """`Truth` on aiomysql: `primary_pool` for ``primary=True`` (default: `pool`). Bucket pages use
    the optional ``sync_hash`` column with `sync_hash_column`, and only ids starting with
    `id_prefix` (a partial repair). Ids are de-duplicated and read `batch_size` at a time, in one
    short transaction. Column values are read under `time_zone` (``[mysql] time_zone``,
    `searchsync.mysql.column_types`); the key and revision columns are the projector's."""

    def __init__(
        self,
        pool: aiomysql.Pool,
        primary_pool: aiomysql.Pool | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        sync_hash_column: bool = False,
        id_prefix: str = "",
        time_zone: tzinfo = UTC,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._pool = pool
        self._primary_pool = primary_pool if primary_pool is not None else pool
        self._batch_size = batch_size
        self._packing = Packing()
        self._types = ColumnTypes(time_zone)
        self._kinds = DataTypes()
        self.bucket_page = partial(  # `Truth.bucket_page`
            bucket_page,
            pool,
            sync_hash_column=sync_hash_column,
            id_prefix=id_prefix,
            packing=self._packing,
            kinds=self._kinds,
            types=self._types,
            soft=SoftDeleteState(time_zone),
        )

    async def rows_by_id(
        self, projector: Projector, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        select = _select(projector)
        sql = f"{select} WHERE {quote_identifier(projector.id_column)} IN %s"
        rows = await self._by_chunks(sql, (), ids, primary, f"read {projector.table}", projector)
        key_of = projector.key_of
        return {key_of(row): row for row in rows}

    async def revision_floors(
        self, aggregate_type: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, int]:
        doing = "read search_revision_floor"
        rows = await self._by_chunks(_FLOOR_SQL, (aggregate_type,), ids, primary, doing)
        return {str(row["aggregate_id"]): int(row["revision"]) for row in rows}

    async def scan(
        self,
        projector: Projector,
        after_id: str | None,
        limit: int,
        *,
        scope: KeyScope | None = None,
    ) -> list[Row]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        select, key = _select(projector), quote_identifier(projector.id_column)
        doing = f"scan {projector.table}"
        async with transaction(self._pool, snapshot=True) as conn:
            conditions, args = await self._where(conn, projector, scope, after_id)
            sql = f"{select}{where_clause(conditions)} ORDER BY {key} LIMIT %s"
            args.append(limit)
            rows = await read_rows(conn, sql, tuple(args), doing, _SCAN_PIECE, types=self._types)
            await read_relations(conn, projector, rows, self._packing, self._types)
        return list(rows)

    async def floor_page(
        self, aggregate_type: str, after_id: str | None, limit: int
    ) -> list[tuple[str, int]]:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        fetched = await fetch_all(
            self._pool,
            "scan search_revision_floor",
            "SELECT aggregate_id, revision FROM search_revision_floor"
            " WHERE aggregate_type = %s AND aggregate_id > %s ORDER BY aggregate_id LIMIT %s",
            (aggregate_type, after_id or "", limit),
        )
        return [(str(r[0]), int(r[1])) for r in fetched]

    async def count(self, projector: Projector, scope: KeyScope | None = None) -> int:
        table = quote_identifier(projector.table)
        async with transaction_cursor(self._pool, f"count {projector.table}") as cur:
            conditions, args = await self._where(cur.connection, projector, scope)
            await cur.execute(f"SELECT COUNT(*) FROM {table}{where_clause(conditions)}", args)
            (total,) = await cur.fetchone()
        return int(total)

    async def split_keys(self, projector: Projector, parts: int, where: str | None) -> list[str]:
        if parts < 1:
            raise ValueError(f"parts must be >= 1, got {parts}")
        step = -(-await self.count(projector, KeyScope(where=where)) // parts)
        table, key = quote_identifier(projector.table), quote_identifier(projector.id_column)
        keys: list[str] = []
        async with transaction_cursor(self._pool, f"split {projector.table}") as cur:
            while step and len(keys) < parts - 1:  # each query walks one part's keys, no more
                scope = KeyScope(low=keys[-1] if keys else None, where=where)
                conditions, args = await self._where(cur.connection, projector, scope)
                sql = (
                    f"SELECT {key} FROM {table}{where_clause(conditions)}"
                    f" ORDER BY {key} LIMIT 1 OFFSET %s"
                )
                await cur.execute(sql, (*args, step - 1))
                found = await cur.fetchone()
                if found is None:
                    break
                keys.append(str(found[0]))
        return keys + [keys[-1] if keys else ""] * (parts - 1 - len(keys))

    async def _where(
        self, conn: Any, projector: Projector, scope: KeyScope | None, after: str | None = None
    ) -> tuple[list[str], list[Any]]:
        """The conditions of `scope` (and of ``key > after``) on the key column, and their
        parameters: an integer key's bounds as ints."""
        key = quote_identifier(projector.id_column)
        integer = await self._kinds.integer(conn, projector.table, projector.id_column)
        conditions, args = scope_sql(scope, key, lambda k: cursor_param(k, integer))
        if after is not None:
            conditions.insert(0, f"{key} > %s")
            args.insert(0, cursor_param(after, integer))
        return conditions, args

    async def _by_chunks(
        self,
        sql: str,
        leading: tuple[Any, ...],
        ids: Sequence[str],
        primary: bool,
        doing: str,
        relate: Projector | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of `sql` for `ids`, a chunk at a time (with their relations by `relate`)."""
        if isinstance(ids, str):
            raise TypeError("ids must be a sequence of ids, not one string")
        unique = list(dict.fromkeys(ids))
        if not unique:
            return []
        pool = self._primary_pool if primary else self._pool
        rows: list[dict[str, Any]] = []
        async with transaction(pool, snapshot=True) as conn:
            params: list[Any] = unique
            if relate is not None:  # the key column's values: ints for an integer key
                integer = await self._kinds.integer(conn, relate.table, relate.id_column)
                params = key_params(unique, integer)
            for start in range(0, len(params), self._batch_size):
                chunk = tuple(params[start : start + self._batch_size])
                # buffered: a chunk is at most batch_size rows, and the live path reads it per batch
                with translate_errors(doing):
                    async with conn.cursor(aiomysql.DictCursor) as cur:
                        await cur.execute(expand_in(sql, len(chunk)), leading + chunk)
                        fetched: list[dict[str, Any]] = list(await cur.fetchall())
                        if relate is not None:
                            self._types.apply(cur.description, fetched)
                if relate is not None:
                    await read_relations(conn, relate, fetched, self._packing, self._types)
                rows.extend(fetched)
        return rows


def _select(projector: Projector) -> str:
    columns = ", ".join(quote_identifier(c) for c in projector.columns)
    return f"SELECT {columns} FROM {quote_identifier(projector.table)}"
