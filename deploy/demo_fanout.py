"""The fan-out in `make demo` (docs/design.md, "Fan-out"): an author with articles is renamed,
and every article of theirs is found in search with the new name."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import MutableMapping
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from demo_canary import canary_env
from searchsync.config import Settings
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import transaction
from searchsync.naming import read_alias_name
from searchsync.types import Operation

ARTICLES = 40
TOPICS = ("outbox.event.article", "outbox.event.author")
MODULE = "searchsync.examples.article"


def demo_env(env: MutableMapping[str, str]) -> None:
    """The canary's settings (`canary_env`), plus the example type `article` and the topics of
    `article` and `author` (where the modules and topics are not set already)."""
    given = {k: k in env for k in ("SEARCHSYNC_PROJECTION_MODULES", "SEARCHSYNC_KAFKA_TOPICS")}
    canary_env(env)
    if not given["SEARCHSYNC_PROJECTION_MODULES"]:
        env["SEARCHSYNC_PROJECTION_MODULES"] += f",{MODULE}"
    if not given["SEARCHSYNC_KAFKA_TOPICS"] and "SEARCHSYNC_KAFKA_TOPICS" in env:
        env["SEARCHSYNC_KAFKA_TOPICS"] += "," + ",".join(TOPICS)


def ensure_topics(bootstrap: str) -> None:
    """Create the topics before the consumer subscribes (as `ensure_canary_topic` does)."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(t, num_partitions=3, replication_factor=1) for t in TOPICS]
    for future in client.create_topics(topics, operation_timeout=20).values():
        try:
            future.result(timeout=30)
        except Exception as exc:  # already there
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


async def _write(pool: Any, table: str, row_id: str, sql: str, args: tuple[Any, ...]) -> None:
    """One change of `row_id` in `table` (`sql` takes the new revision last) and its event."""
    async with transaction(pool) as conn:
        async with conn.cursor() as cur:
            await cur.execute(f"SELECT revision FROM {table} WHERE id = %s FOR UPDATE", (row_id,))
            found = await cur.fetchone()
            revision = 1 if found is None else int(found[0]) + 1
            await cur.execute(sql, (*args, revision))
        await append_outbox(conn, table, row_id, Operation.UPSERT, revision)


async def fanout_demo(settings: Settings, es: Any, pool: Any) -> str:
    """Create an author with `ARTICLES` articles, rename them, and say how long it took until a
    search of the read alias finds every article with the new name."""
    if not any(m.startswith(MODULE) for m in settings.projection.modules):
        return "fan-out: the example type article is not enabled (projection.modules)"
    u = uuid.uuid4().hex[:6]
    author, index = f"demo-{u}-author", read_alias_name(settings.alias("article"))
    upsert = (
        "INSERT INTO author (id, name, updated_at, revision) VALUES (%s, %s, UTC_TIMESTAMP(6), %s)"
        " ON DUPLICATE KEY UPDATE name = VALUES(name), revision = VALUES(revision)"
    )
    await _write(pool, "author", author, upsert, (author, f"Qi Xia {u}"))
    for i in range(ARTICLES):
        article_id = f"demo-{u}-article-{i:02d}"
        await _write(
            pool,
            "article",
            article_id,
            "INSERT INTO article (id, title, body, author_id, updated_at, revision)"
            " VALUES (%s, %s, 'body', %s, UTC_TIMESTAMP(6), %s)",
            (article_id, f"Article {i}", author),
        )

    async def found(name: str) -> int:
        query = {"bool": {"filter": [{"term": {"author_name.keyword": name}}]}}
        query["bool"]["filter"].append({"prefix": {"id": f"demo-{u}-article-"}})
        return int((await es.count(index=index, query=query))["count"])

    if not await _until(lambda: found(f"Qi Xia {u}"), ARTICLES, 60):
        return f"fan-out: the articles were not indexed within 60 s (is {TOPICS} subscribed?)"
    renamed = f"Qi Xia the Rules Master {u}"
    started = time.monotonic()
    await _write(pool, "author", author, upsert, (author, renamed))
    if not await _until(lambda: found(renamed), ARTICLES, 60):
        return f"fan-out: not every article showed {renamed!r} within 60 s"
    return (
        f'fan-out: author {author} renamed to "{renamed}"; all {ARTICLES} of their articles are'
        f" found with the new name in {index} {time.monotonic() - started:.2f} s after the commit"
        " (REBUILD events from the ids in MySQL)"
    )


async def _until(count: Any, want: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if await count() >= want:
            return True
        await asyncio.sleep(0.1)
    return False
