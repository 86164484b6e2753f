"""The application side of the example type `author` for the fan-out tests: a create or a rename
bumps the row's revision and appends its outbox event in one transaction (invariants 1 and 2).
Articles change through tests/integration/article_app.py."""

from __future__ import annotations

import aiomysql
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import transaction
from searchsync.types import Operation

__all__ = ["author_write"]


async def author_write(pool: aiomysql.Pool, author_id: str, name: str) -> int:
    """Create or rename an author; its committed revision."""
    async with transaction(pool) as conn:
        async with conn.cursor() as cur:
            await cur.execute("SELECT revision FROM author WHERE id = %s FOR UPDATE", (author_id,))
            found = await cur.fetchone()
            revision = 1 if found is None else int(found[0]) + 1
            if found is not None:
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
