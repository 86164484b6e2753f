"""What a database holds of the tables projectors read, from ``information_schema``: their
columns and the leading columns of their indexes (``searchsync config check --connect``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Protocol

import aiomysql

from searchsync.mysql.pool import expand_in, transaction_cursor


class TableSchema(Protocol):
    async def columns(self, tables: Sequence[str]) -> dict[str, frozenset[str]]:
        """The columns of each of `tables` that exists (a missing table is absent)."""
        ...

    async def indexes(self, table: str) -> list[tuple[str, ...]]:
        """The columns of each index of `table`, in index order."""
        ...


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
        async with transaction_cursor(self._pool, "read information_schema.COLUMNS") as cur:
            await cur.execute(sql, tuple(sorted(set(tables))))
            for table, column in await cur.fetchall():
                found[str(table)].add(str(column))
        return {table: frozenset(names) for table, names in found.items()}

    async def indexes(self, table: str) -> list[tuple[str, ...]]:
        found: dict[str, list[tuple[int, str]]] = defaultdict(list)
        async with transaction_cursor(self._pool, "read information_schema.STATISTICS") as cur:
            await cur.execute(
                "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME FROM information_schema.STATISTICS"
                " WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
                (table,),
            )
            for name, seq, column in await cur.fetchall():
                found[str(name)].append((int(seq), str(column)))
        return [tuple(c for _, c in sorted(parts)) for _, parts in sorted(found.items())]
