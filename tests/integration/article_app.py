"""The example `article`'s application side in tests: one transaction changes the article row
and/or its tags (child rows in ``article_tag``), bumps the article's revision and appends its
outbox event, as an application of its own would (the children belong to the aggregate). Authors
are plain rows here (`put_author`); their own events and fan-out are another test's business.
"""

from __future__ import annotations

from typing import Any

import aiomysql
from searchsync.examples import article
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import transaction
from searchsync.types import Operation

__all__ = ["article_change", "put_author"]

_UNSET: Any = object()


async def article_change(
    pool: aiomysql.Pool,
    article_id: str,
    *,
    title: str | None = None,
    tags: list[str] | None = None,
    author_id: str | None = _UNSET,
    deleted: bool | None = None,
    hard_delete: bool = False,
) -> int:
    """Create or change one article (revision + 1) and append its outbox event; `tags`, when
    given, replace its tags (positions in list order, later duplicates dropped)."""
    async with transaction(pool) as conn:
        async with conn.cursor() as cur:
            await cur.execute(
                "SELECT revision FROM article WHERE id = %s FOR UPDATE", (article_id,)
            )
            found = await cur.fetchone()
            if found is None:
                await cur.execute(
                    "SELECT revision FROM search_revision_floor"
                    " WHERE aggregate_type = 'article' AND aggregate_id = %s FOR UPDATE",
                    (article_id,),
                )
                floor = await cur.fetchone()
                revision = (0 if floor is None else int(floor[0])) + 1
                await cur.execute(
                    "INSERT INTO article (id, title, body, author_id, revision, updated_at)"
                    " VALUES (%s, %s, %s, %s, %s, UTC_TIMESTAMP(6))",
                    (article_id, title or "untitled", "body",
                     None if author_id is _UNSET else author_id, revision),
                )  # fmt: skip
                op = Operation.UPSERT
            elif hard_delete:
                revision = int(found[0]) + 1
                await cur.execute("DELETE FROM article_tag WHERE article_id = %s", (article_id,))
                await cur.execute("DELETE FROM article WHERE id = %s", (article_id,))
                await cur.execute(
                    "INSERT INTO search_revision_floor (aggregate_type, aggregate_id, revision,"
                    " deleted_at) VALUES ('article', %s, %s, UTC_TIMESTAMP(6))",
                    (article_id, revision),
                )
                op = Operation.TOMBSTONE
            else:
                revision = int(found[0]) + 1
                sets = ["revision = %s", "updated_at = UTC_TIMESTAMP(6)"]
                args: list[Any] = [revision]
                if title is not None:
                    sets.append("title = %s")
                    args.append(title)
                if author_id is not _UNSET:  # None: the article loses its author
                    sets.append("author_id = %s")
                    args.append(author_id)
                if deleted is not None:
                    sets.append("deleted_at = IF(%s, UTC_TIMESTAMP(6), NULL)")
                    args.append(deleted)
                await cur.execute(
                    f"UPDATE article SET {', '.join(sets)} WHERE id = %s", (*args, article_id)
                )
                op = Operation.TOMBSTONE if deleted else Operation.UPSERT
            if tags is not None and not hard_delete:
                await cur.execute("DELETE FROM article_tag WHERE article_id = %s", (article_id,))
                for position, tag in enumerate(dict.fromkeys(tags)):
                    await cur.execute(
                        "INSERT INTO article_tag (article_id, position, tag) VALUES (%s, %s, %s)",
                        (article_id, position, tag),
                    )
        await append_outbox(conn, article.AGGREGATE_TYPE, article_id, op, revision)
    return revision


async def put_author(pool: aiomysql.Pool, author_id: str, name: str) -> None:
    """Create or rename one author row (revision + 1), without an outbox event."""
    async with transaction(pool) as conn, conn.cursor() as cur:
        await cur.execute(
            "INSERT INTO author (id, name, revision, updated_at)"
            " VALUES (%s, %s, 1, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE name = VALUES(name),"
            " revision = revision + 1, updated_at = VALUES(updated_at)",
            (author_id, name),
        )
