"""The MySQL port: load the current rows of many aggregates by id, in batches.

The consumer never trusts an event's content; it re-reads the truth. `TruthReader` is the narrow
port the pipeline, the rebuild and the repair job depend on; `MysqlTruth` implements it on
aiomysql and `InMemoryTruth` in memory, so the same contract tests run against both.

The SELECT is the projector's (``Projector.select_sql``): it decides the columns and must return
soft-deleted rows too; this module only supplies the ids (``WHERE id IN %s``), batches them and
keys the rows by their ``id`` column. A missing id is simply absent from the result; the caller
decides what a missing row means.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

import aiomysql

from consumer.mysql.pool import expand_in, transaction, translate_errors
from consumer.projection._registry import Row

__all__ = ["DEFAULT_BATCH_SIZE", "InMemoryTruth", "MysqlTruth", "Row", "TruthReader"]

DEFAULT_BATCH_SIZE: Final = 500
_IN_PLACEHOLDER: Final = "IN %s"


class TruthReader(Protocol):
    """Reads current rows by id.

    `primary=True` asks for a read that cannot lag (the primary, not a replica): the pipeline
    uses it to re-read a row that is older than its event.
    """

    async def load(
        self, select_sql: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]: ...


class MysqlTruth:
    """`TruthReader` on aiomysql pools: `pool` for ordinary reads, `primary_pool` for
    ``primary=True`` (the same pool when there is no replica).

    Ids are de-duplicated and read in chunks of at most `batch_size` (one query each, all in one
    short transaction). Unreachable or lost connections raise
    `TransientError("MYSQL_UNAVAILABLE")`; SQL errors pass through unchanged (a bug, not an
    outage).
    """

    def __init__(
        self,
        pool: aiomysql.Pool,
        primary_pool: aiomysql.Pool | None = None,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._pool = pool
        self._primary_pool = primary_pool if primary_pool is not None else pool
        self._batch_size = batch_size

    async def load(
        self, select_sql: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        _check_select(select_sql)
        unique = _unique(ids)
        if not unique:
            return {}
        pool = self._primary_pool if primary else self._pool
        rows: dict[str, Row] = {}
        async with transaction(pool) as conn:
            for start in range(0, len(unique), self._batch_size):
                chunk = tuple(unique[start : start + self._batch_size])
                with translate_errors("read truth"):
                    async with conn.cursor(aiomysql.DictCursor) as cur:
                        await cur.execute(expand_in(select_sql, len(chunk)), chunk)
                        fetched: Iterable[dict[str, Any]] = await cur.fetchall()
                for row in fetched:
                    rows[str(row["id"])] = row
        return rows


class InMemoryTruth:
    """`TruthReader` over rows a test puts in; `select_sql` is checked, then ignored.

    `primary_rows` lets a test model a lagging replica: ``primary=True`` reads them first, then
    `rows`. `calls` records each load's ids and `primary` flag.
    """

    def __init__(self) -> None:
        self.rows: dict[str, Row] = {}
        self.primary_rows: dict[str, Row] = {}
        self.calls: list[tuple[tuple[str, ...], bool]] = []

    def put(self, row: Mapping[str, Any], *, primary_only: bool = False) -> None:
        """Store `row` under ``row["id"]`` (replacing any earlier row of that id)."""
        target = self.primary_rows if primary_only else self.rows
        target[str(row["id"])] = dict(row)

    def remove(self, row_id: str) -> None:
        self.rows.pop(row_id, None)
        self.primary_rows.pop(row_id, None)

    async def load(
        self, select_sql: str, ids: Sequence[str], *, primary: bool = False
    ) -> dict[str, Row]:
        _check_select(select_sql)
        unique = _unique(ids)
        self.calls.append((tuple(unique), primary))
        found: dict[str, Row] = {}
        for row_id in unique:
            row = self.primary_rows.get(row_id) if primary else None
            if row is None:
                row = self.rows.get(row_id)
            if row is not None:
                found[row_id] = row
        return found


def _check_select(select_sql: str) -> None:
    if select_sql.count(_IN_PLACEHOLDER) != 1 or select_sql.count("%s") != 1:
        raise ValueError(
            f"select_sql needs exactly one placeholder, as 'WHERE id IN %s': {select_sql!r}"
        )


def _unique(ids: Sequence[str]) -> list[str]:
    if isinstance(ids, str):
        raise TypeError("ids must be a sequence of ids, not one string")
    return list(dict.fromkeys(ids))
