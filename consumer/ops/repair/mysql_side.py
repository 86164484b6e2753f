"""`TruthSide` on MySQL/MariaDB (docs/design.md, "Repair").

A bucket page is ``WHERE <key> >= lo AND <key> < hi AND id > after ORDER BY id LIMIT n``. The
key is ``CRC32(CONCAT('<type>:', id))`` computed per row: without an index on it each bucket
reads the whole id range (a keyset scan of the primary key, the hash evaluated per row, so a
rotation of M buckets reads the table M times). With the optional migration
``schemas/sql/optional/sync_bucket.sql`` (a stored generated column ``sync_hash`` and an index
``(sync_hash, id)``) and ``repair.mysql_sync_hash_column = true`` a bucket reads only its rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import aiomysql

from consumer.mysql.pool import transaction, translate_errors
from consumer.mysql.truth import MysqlTruth
from consumer.ops.repair.model import TruthEntry
from consumer.ops.repair.sides import entry_of_row
from consumer.projection import Projector

__all__ = ["MysqlTruthSide"]


class MysqlTruthSide:
    def __init__(
        self, pool: aiomysql.Pool, *, sync_hash_column: bool = False, id_prefix: str = ""
    ) -> None:
        """`id_prefix` limits the scan to ids starting with it (a partial repair; tests)."""
        self._pool = pool
        self._prefix = id_prefix
        self._truth = MysqlTruth(pool)
        self._column = sync_hash_column

    async def bucket_page(
        self,
        projector: Projector,
        lo: int,
        hi: int,
        after_id: str | None,
        limit: int,
        *,
        content: bool,
    ) -> list[TruthEntry]:
        columns = projector.columns if content else ("id", "revision", "deleted_at")
        select = ", ".join(f"`{c}`" for c in columns)
        key = "`sync_hash`" if self._column else "CRC32(CONCAT(%s, `id`))"
        args: list[Any] = [] if self._column else [f"{projector.aggregate_type}:"]
        where = f"{key} >= %s AND {key} < %s"
        args = [*args, lo, *args, hi]
        if after_id is not None:
            where += " AND `id` > %s"
            args.append(after_id)
        if self._prefix:
            where += " AND `id` LIKE %s"
            args.append(_like_prefix(self._prefix))
        sql = f"SELECT {select} FROM `{projector.table}` WHERE {where} ORDER BY `id` LIMIT %s"
        args.append(limit)
        async with transaction(self._pool) as conn:
            with translate_errors(f"repair scan {projector.table}"):
                if content:
                    async with conn.cursor(aiomysql.DictCursor) as cur:
                        await cur.execute(sql, tuple(args))
                        rows: Iterable[dict[str, Any]] = await cur.fetchall()
                    return [entry_of_row(r, content=True) for r in rows]
                async with conn.cursor() as cur:  # tuples: (id, revision, deleted_at)
                    await cur.execute(sql, tuple(args))
                    light: Iterable[tuple[Any, ...]] = await cur.fetchall()
        return [TruthEntry(str(i), int(rev), deleted is not None) for i, rev, deleted in light]

    async def by_ids(self, projector: Projector, ids: Sequence[str]) -> dict[str, TruthEntry]:
        rows = await self._truth.rows_by_id(projector, ids, primary=True)
        return {i: entry_of_row(r, content=True) for i, r in rows.items()}


def _like_prefix(prefix: str) -> str:
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
