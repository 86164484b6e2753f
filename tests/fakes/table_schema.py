"""`TableSchema` over dicts: the columns and indexes a test says the database has."""

from __future__ import annotations

from collections.abc import Sequence


class FakeTableSchema:
    def __init__(
        self,
        columns: dict[str, set[str]],
        indexes: dict[str, list[tuple[str, ...]]] | None = None,
    ) -> None:
        self._columns = columns
        self._indexes = indexes or {}

    async def columns(self, tables: Sequence[str]) -> dict[str, frozenset[str]]:
        return {t: frozenset(self._columns[t]) for t in tables if t in self._columns}

    async def indexes(self, table: str) -> list[tuple[str, ...]]:
        return list(self._indexes.get(table, []))
