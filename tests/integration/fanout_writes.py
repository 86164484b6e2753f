"""The application side of the example types `author` and `article` for the fan-out tests: each
change bumps the row's revision and appends its outbox event in one transaction (invariants 1
and 2); a hard delete raises the id's revision floor."""

from __future__ import annotations

from typing import Any

import aiomysql
from searchsync.mysql.pool import transaction
from searchsync.types import Operation
from searchsync.writer import append_outbox

__all__ = ["article_write", "author_write"]


async def _locked_revision(cur: Any, table: str, kind: str, row_id: str) -> tuple[int, bool]:
    """The next revision of `row_id` and whether its row exists (locked)."""
    await cur.execute(f"SELECT revision FROM {table} WHERE id = %s FOR UPDATE", (row_id,))
    found = await cur.fetchone()
    if found is not None:
        return int(found[0]) + 1, True
    await cur.execute(
        "SELECT revision FROM search_revision_floor WHERE aggregate_type = %s"
        " AND aggregate_id = %s FOR UPDATE",
        (kind, row_id),
    )
    floor = await cur.fetchone()
    return (0 if floor is None else int(floor[0])) + 1, False


async def author_write(pool: aiomysql.Pool, author_id: str, name: str) -> int:
    """Create or rename an author; its committed revision."""
    async with transaction(pool) as conn:
        async with conn.cursor() as cur:
            revision, exists = await _locked_revision(cur, "author", "author", author_id)
            if exists:
                await cur.execute(
                    "UPDATE author SET name = %s, revision = %s, updated_at = UTC_TIMESTAMP(6)"
                    " WHERE id = %s",
                    (name, revision, author_id),
                )
            else:
                await cur.execute(
                    "INSERT INTO author (id, name, revision, updated_at)"
                    " VALUES (%s, %s, %s, UTC_TIMESTAMP(6))",
                    (author_id, name, revision),
                )
        await append_outbox(conn, "author", author_id, Operation.UPSERT, revision)
    return revision


async def article_write(
    pool: aiomysql.Pool,
    article_id: str,
    *,
    author_id: str | None = None,
    title: str = "untitled",
    soft_delete: bool = False,
    hard_delete: bool = False,
) -> int:
    """Create an article, point it at `author_id` (and retitle it), or delete it; its revision."""
    async with transaction(pool) as conn:
        async with conn.cursor() as cur:
            revision, exists = await _locked_revision(cur, "article", "article", article_id)
            op = Operation.UPSERT
            if hard_delete:
                await cur.execute("DELETE FROM article WHERE id = %s", (article_id,))
                await cur.execute(
                    "INSERT INTO search_revision_floor (aggregate_type, aggregate_id, revision,"
                    " deleted_at) VALUES ('article', %s, %s, UTC_TIMESTAMP(6))"
                    " ON DUPLICATE KEY UPDATE revision = VALUES(revision)",
                    (article_id, revision),
                )
                op = Operation.TOMBSTONE
            elif soft_delete:
                await cur.execute(
                    "UPDATE article SET deleted_at = UTC_TIMESTAMP(6), revision = %s,"
                    " updated_at = UTC_TIMESTAMP(6) WHERE id = %s",
                    (revision, article_id),
                )
                op = Operation.TOMBSTONE
            elif exists:
                await cur.execute(
                    "UPDATE article SET author_id = %s, title = %s, revision = %s,"
                    " updated_at = UTC_TIMESTAMP(6) WHERE id = %s",
                    (author_id, title, revision, article_id),
                )
            else:
                await cur.execute(
                    "INSERT INTO article (id, title, body, author_id, revision, updated_at)"
                    " VALUES (%s, %s, 'body', %s, %s, UTC_TIMESTAMP(6))",
                    (article_id, title, author_id, revision),
                )
        await append_outbox(conn, "article", article_id, op, revision)
    return revision
