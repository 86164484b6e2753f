"""`RelayStore` on MySQL/MariaDB: the claim query of docs/relay.md and the status updates around
it. Every time compared or stamped is the database's (``NOW(6)``), so relays with skewed clocks
agree; each method is one short READ COMMITTED transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, Final

import aiomysql

from searchsync.mysql.pool import expand_in, fetch_all, quote_identifier, transaction_cursor
from searchsync.relay.port import (
    DEAD,
    PENDING,
    PROCESSING,
    PUBLISHED,
    DeadRow,
    Failure,
    OutboxCounts,
    OutboxEntry,
    RelayStatus,
)

_COLUMNS: Final = (
    "id, event_id, aggregate_type, aggregate_id, operation, source_revision, payload, attempts"
)
_ERROR_CHARS: Final = 2_000
_MICROSECOND: Final = timedelta(microseconds=1)


class MysqlRelayStore:
    """The outbox table `table` (``[relay] table``) through `pool`."""

    def __init__(self, pool: aiomysql.Pool, table: str = "search_outbox") -> None:
        self._pool = pool
        self._table = quote_identifier(table)

    async def claim(self, holder: str, limit: int) -> list[OutboxEntry]:
        t = self._table
        async with transaction_cursor(self._pool, f"claim {t}") as cur:
            await cur.execute(
                f"SELECT {_COLUMNS} FROM {t} WHERE status = 'PENDING'"
                " AND available_at <= NOW(6) ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED",
                (limit,),
            )
            rows = await cur.fetchall()
            if rows:
                ids = [int(r[0]) for r in rows]
                await cur.execute(
                    expand_in(
                        f"UPDATE {t} SET status = %s, locked_by = %s, locked_at = NOW(6),"
                        " updated_at = NOW(6) WHERE id IN %s",
                        len(ids),
                    ),
                    (PROCESSING, holder, *ids),
                )
        return [_entry(r) for r in rows]

    async def mark_published(self, ids: Sequence[int]) -> int:
        if not ids:
            return 0
        return await self._update(
            expand_in(
                f"UPDATE {self._table} SET status = %s, locked_by = NULL, locked_at = NULL,"
                " last_error = NULL, updated_at = NOW(6) WHERE id IN %s AND status <> %s",
                len(ids),
            ),
            (PUBLISHED, *ids, PUBLISHED),
        )

    async def mark_failed(self, holder: str, failures: Sequence[Failure], max_attempts: int) -> int:
        if not failures:
            return 0
        t = self._table
        dead = 0
        async with transaction_cursor(self._pool, f"mark failures in {t}") as cur:
            for f in failures:
                counts, delay_us = int(f.counts), f.delay // _MICROSECOND
                change = (counts, max_attempts, DEAD, PENDING, counts, f.error[:_ERROR_CHARS])
                await cur.execute(
                    f"UPDATE {t} SET status = IF(%s AND attempts + 1 >= %s, %s, %s),"
                    " attempts = attempts + %s, last_error = %s,"
                    " available_at = NOW(6) + INTERVAL %s MICROSECOND,"
                    " locked_by = NULL, locked_at = NULL, updated_at = NOW(6)"
                    " WHERE id = %s AND status = %s AND locked_by = %s",
                    (*change, delay_us, f.id, PROCESSING, holder),
                )
                if cur.rowcount:
                    await cur.execute(f"SELECT status FROM {t} WHERE id = %s", (f.id,))
                    row = await cur.fetchone()
                    dead += int(row is not None and row[0] == DEAD)
        return dead

    async def take_back(self, timeout_s: float, max_attempts: int) -> int:
        return await self._update(
            f"UPDATE {self._table} SET status = IF(attempts + 1 >= %s, %s, %s),"
            " attempts = attempts + 1,"
            " last_error = CONCAT('claim by ', locked_by, ' timed out'),"
            " available_at = NOW(6), locked_by = NULL, locked_at = NULL, updated_at = NOW(6)"
            " WHERE status = %s AND locked_at < NOW(6) - INTERVAL %s MICROSECOND",
            (max_attempts, DEAD, PENDING, PROCESSING, round(timeout_s * 1_000_000)),
        )

    async def counts(self) -> OutboxCounts:
        t = self._table
        async with transaction_cursor(self._pool, f"count {t}") as cur:
            await cur.execute(
                f"SELECT status, COUNT(*) FROM {t} WHERE status IN (%s, %s, %s) GROUP BY status",
                (PENDING, PROCESSING, DEAD),
            )
            by_status = {str(r[0]): int(r[1]) for r in await cur.fetchall()}
            await cur.execute(
                "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(created_at), NOW(6))"
                f" FROM {t} WHERE status = %s",
                (PENDING,),
            )
            row = await cur.fetchone()
        age = None if row is None or row[0] is None else max(0.0, int(row[0]) / 1e6)
        pending, processing, dead = (by_status.get(s, 0) for s in (PENDING, PROCESSING, DEAD))
        return OutboxCounts(pending, processing, dead, age)

    async def claimed_any(self) -> bool:
        t = self._table
        sql = f"SELECT 1 FROM {t} WHERE status IN (%s, %s, %s) LIMIT 1"
        return bool(await fetch_all(self._pool, f"read {t}", sql, (PROCESSING, PUBLISHED, DEAD)))

    async def status(self, claim_timeout_s: float) -> RelayStatus:
        t = self._table
        counts = await self.counts()
        async with transaction_cursor(self._pool, f"read {t}") as cur:
            await cur.execute(f"SELECT COUNT(*) FROM {t} WHERE status = %s", (PUBLISHED,))
            published = int((await cur.fetchone())[0])
            await cur.execute(
                f"SELECT COUNT(*) FROM {t} WHERE status = %s AND available_at > NOW(6)",
                (PENDING,),
            )
            retrying = int((await cur.fetchone())[0])
            await cur.execute(
                "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(available_at), NOW(6))"
                f" FROM {t} WHERE status = %s AND available_at <= NOW(6)",
                (PENDING,),
            )
            due = (await cur.fetchone())[0]
            await cur.execute(
                f"SELECT locked_by, COUNT(*), SUM(locked_at < NOW(6) - INTERVAL %s"
                f" MICROSECOND) FROM {t} WHERE status = %s GROUP BY locked_by",
                (round(claim_timeout_s * 1_000_000), PROCESSING),
            )
            claims = list(await cur.fetchall())
        return RelayStatus(
            counts=counts,
            published=published,
            retrying=retrying,
            oldest_due_age_s=None if due is None else max(0.0, int(due) / 1e6),
            stale_claims=sum(int(r[2] or 0) for r in claims),
            holders={str(r[0]): int(r[1]) for r in claims},
        )

    async def dead(self, limit: int) -> list[DeadRow]:
        rows = await fetch_all(
            self._pool,
            f"read {self._table}",
            "SELECT id, event_id, aggregate_type, aggregate_id, operation, source_revision,"
            f" attempts, last_error, updated_at FROM {self._table}"
            " WHERE status = %s ORDER BY id LIMIT %s",
            (DEAD, limit),
        )
        return [
            DeadRow(int(r[0]), r[1], r[2], r[3], r[4], int(r[5]), int(r[6]), r[7], r[8])
            for r in rows
        ]

    async def revive(self, ids: Sequence[int] | None) -> int:
        sql = (
            f"UPDATE {self._table} SET status = %s, attempts = 0, available_at = NOW(6),"
            " locked_by = NULL, locked_at = NULL, updated_at = NOW(6) WHERE status = %s"
        )
        if ids is None:
            return await self._update(sql, (PENDING, DEAD))
        if not ids:
            return 0
        return await self._update(expand_in(sql + " AND id IN %s", len(ids)), (PENDING, DEAD, *ids))

    async def _update(self, sql: str, args: tuple[Any, ...]) -> int:
        async with transaction_cursor(self._pool, f"update {self._table}") as cur:
            await cur.execute(sql, args)
            return int(cur.rowcount)


def _entry(r: Sequence[Any]) -> OutboxEntry:
    payload = r[6].decode("utf-8") if isinstance(r[6], bytes | bytearray) else str(r[6])
    event_id, aggregate_type, aggregate_id, operation = map(str, r[1:5])
    return OutboxEntry(
        int(r[0]), event_id, aggregate_type, aggregate_id, operation, int(r[5]), payload, int(r[7])
    )
