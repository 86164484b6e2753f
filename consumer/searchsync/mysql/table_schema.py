"""What a database holds of the tables projectors read, from ``information_schema``: their
columns and the leading columns of their indexes (``searchsync config check --connect``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

import aiomysql

from searchsync.mysql.pool import expand_in, fetch_all


class TableSchema(Protocol):
    async def columns(self, tables: Sequence[str]) -> dict[str, frozenset[str]]:
        """The columns of each of `tables` that exists (a missing table is absent)."""

    async def indexes(self, table: str) -> list[tuple[str, ...]]:
        """The columns of each index of `table`, in index order."""


class MysqlTableSchema:
    """`TableSchema` of the connection's current database."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def columns(self, tables: Sequence[str]) -> dict[str, frozenset[str]]:
        if not tables:
            return {}
        found: dict[str, set[str]] = defaultdict(set)
        sql = expand_in(
            "SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS"
            " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN %s",
            len(set(tables)),
        )
        doing = "read information_schema.COLUMNS"
        for table, column in await fetch_all(self._pool, doing, sql, tuple(sorted(set(tables)))):
            found[str(table)].add(str(column))
        return {table: frozenset(names) for table, names in found.items()}

    async def indexes(self, table: str) -> list[tuple[str, ...]]:
        found: dict[str, list[tuple[int, str]]] = defaultdict(list)
        rows = await fetch_all(
            self._pool,
            "read information_schema.STATISTICS",
            "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS"
            " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (table,),
        )
        for name, seq, column in rows:
            found[str(name)].append((int(seq), str(column)))
        return [tuple(c for _, c in sorted(parts)) for _, parts in sorted(found.items())]
