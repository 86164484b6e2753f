"""Scratch copies of an aggregate table for benchmarks and tests on a checkout's local stack:
the optional ``sync_bucket`` migration (schemas/sql/optional/sync_bucket.sql) rewritten for a
copy, and DDL run as MariaDB's root over its unix socket. Not used by searchsync itself."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import aiomysql

from searchsync.mysql.pool import IDENTIFIER

__all__ = ["SYNC_BUCKET_SQL", "admin_execute", "sync_bucket_migration"]

SYNC_BUCKET_SQL: Final = (
    Path(__file__).resolve().parents[3] / "schemas" / "sql" / "optional" / "sync_bucket.sql"
)
_TABLE: Final = "wiki_page"


def sync_bucket_migration(table: str) -> str:
    """The statement of ``sync_bucket.sql`` for a copy of wiki_page named `table` (the bucket key
    expression is unchanged: the aggregate type stays wiki_page)."""
    if not IDENTIFIER.fullmatch(table):
        raise ValueError(f"table {table!r}: want an identifier [A-Za-z_][A-Za-z0-9_]*")
    text = SYNC_BUCKET_SQL.read_text(encoding="utf-8")
    sql = " ".join(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("--")
    ).rstrip(";")
    head = f"ALTER TABLE {_TABLE} "
    if not sql.startswith(head):
        raise RuntimeError(f"{SYNC_BUCKET_SQL} does not start with {head!r}")
    sql = f"ALTER TABLE `{table}` " + sql[len(head) :]
    return sql.replace(f"idx_{_TABLE}_sync_hash_id", f"idx_{table}_sync_hash_id")


async def admin_execute(socket: str, database: str, statements: Sequence[str]) -> None:
    """Run `statements` (DDL, grants) as root over the server's unix socket, autocommit."""
    conn = await aiomysql.connect(unix_socket=socket, user="root", db=database, autocommit=True)
    try:
        async with conn.cursor() as cur:
            for sql in statements:
                await cur.execute(sql)
    finally:
        conn.close()
