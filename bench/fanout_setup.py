"""The fan-out benchmark's resources and writes: pools, client, the in-process live consumer of
``wiki_page``, ``article`` and ``author``, and the author with its articles."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from datetime import datetime
from typing import Any

import aiomysql
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.config import Settings
from searchsync.mysql.outbox import append_outbox
from searchsync.mysql.pool import close_pool, open_pool, transaction
from searchsync.observability.metrics import Metrics
from searchsync.ops import offsets
from searchsync.projection import registry_from_settings
from searchsync.runtime import run_consumer
from searchsync.search.client import make_es_client
from searchsync.types import Operation

from bench.common import (
    MGET_CHUNK,
    delete_group,
    init_alias,
    metric_total,
    missing,
    open_app_pool,
    progress,
    wait_for,
)

TOPICS = "outbox.event.wiki_page,outbox.event.article,outbox.event.author"
MODULES = "searchsync.projection.wiki_page,searchsync.examples.article"
SEED_TXN = 250  # articles (and their outbox rows) per seeding transaction


class FanoutBench:
    def __init__(self, settings: Settings, env: dict[str, str]) -> None:
        self.settings, self.env = settings, env
        self.registry = registry_from_settings(settings.projection)
        self.u = uuid.uuid4().hex[:8]
        self.author_id = f"fbench-{self.u}-author"
        self.metrics = Metrics()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None
        self.pool: aiomysql.Pool | None = None
        self.app: aiomysql.Pool | None = None
        self.es: AsyncElasticsearch | None = None
        self.notes: list[str] = []

    @property
    def client(self) -> AsyncElasticsearch:
        assert self.es is not None
        return self.es

    async def open(self) -> None:
        m = self.settings.mysql
        self.pool = await open_pool(m, maxsize=4)
        self.app = await open_app_pool(m, minsize=1, maxsize=6)
        self.es = make_es_client(self.settings)
        for kind in ("wiki_page", "article"):
            await init_alias(self.es, self.settings.alias(kind), self.registry.get(kind))
        offsets.reset(self.settings, "latest", dry_run=False)
        self.task = asyncio.create_task(
            run_consumer(self.settings, stop=self.stop, metrics=self.metrics)
        )

        async def assigned() -> bool:
            self.check_alive()
            return metric_total(self.metrics, "searchsync_partitions_assigned") > 0

        await wait_for(assigned, 60, "the live consumer's partitions assigned")

    def check_alive(self) -> None:
        if self.task is not None and self.task.done():
            raise RuntimeError(f"the live consumer exited early: {self.task.result()}")

    async def close(self) -> None:
        if self.task is not None:
            self.stop.set()
            try:
                await asyncio.wait_for(self.task, 60)
            except Exception as exc:
                self.notes.append(f"live consumer shutdown: {exc!r}")
        if self.es is not None:
            with contextlib.suppress(NotFoundError):
                got: Any = await self.es.indices.get(
                    index=f"{self.settings.elasticsearch.index_prefix}*"
                )
                for name in got.body:
                    with contextlib.suppress(NotFoundError):
                        await self.es.indices.delete(index=name)
            await self.es.close()
        for pool in (self.pool, self.app):
            if pool is not None:
                await close_pool(pool)
        with contextlib.suppress(Exception):
            delete_group(self.settings.kafka.bootstrap_servers, self.settings.kafka.group_id)

    async def rename(self, name: str) -> float:
        """Create or rename the author (revision + 1, its outbox event); the commit time."""
        assert self.app is not None
        async with transaction(self.app) as conn:
            async with conn.cursor() as cur:
                await cur.execute(
                    "SELECT revision FROM author WHERE id = %s FOR UPDATE", (self.author_id,)
                )
                found = await cur.fetchone()
                revision = 1 if found is None else int(found[0]) + 1
                await cur.execute(
                    "INSERT INTO author (id, name, revision, updated_at)"
                    " VALUES (%s, %s, %s, UTC_TIMESTAMP(6)) ON DUPLICATE KEY UPDATE"
                    " name = VALUES(name), revision = VALUES(revision),"
                    " updated_at = VALUES(updated_at)",
                    (self.author_id, name, revision),
                )
            await append_outbox(conn, "author", self.author_id, Operation.UPSERT, revision)
        return time.monotonic()

    async def seed(self, count: int) -> list[str]:
        """The author and `count` articles of theirs, created with their events; waits until
        the live consumer has indexed every one."""
        assert self.app is not None
        await self.rename(f"author {self.u}")
        ids = [f"fbench-{self.u}-{i:06d}" for i in range(count)]
        t0 = time.monotonic()
        for start in range(0, count, SEED_TXN):
            chunk = ids[start : start + SEED_TXN]
            async with transaction(self.app) as conn:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "INSERT INTO article (id, title, body, author_id, revision, updated_at)"
                        " VALUES (%s, %s, 'body', %s, 1, UTC_TIMESTAMP(6))",
                        [(i, f"article {i}", self.author_id) for i in chunk],
                    )
                for i in chunk:
                    await append_outbox(conn, "article", i, Operation.UPSERT, 1)
        progress(f"seeded {count} articles in {time.monotonic() - t0:.1f}s; indexing them")
        alias = self.settings.alias("article")

        async def indexed() -> bool:
            self.check_alive()
            return not await missing(self.client, alias, ids, version=1)

        await wait_for(indexed, 600, f"{count} articles indexed", 1.0)
        return ids

    async def finished_at(self) -> datetime | None:
        """When the author's fan-out job last finished (naive UTC), or None."""
        assert self.pool is not None
        async with transaction(self.pool) as conn, conn.cursor() as cur:
            await cur.execute(
                "SELECT MAX(finished_at) FROM search_fanout WHERE referenced_type = 'author'"
                " AND referenced_id = %s AND status = 'done'",
                (self.author_id,),
            )
            row = await cur.fetchone()
        return None if row is None else row[0]

    async def showing(self, ids: list[str], name: str) -> int:
        """How many of `ids` show `name` as their author (realtime mget)."""
        alias, n = self.settings.alias("article"), 0
        for start in range(0, len(ids), MGET_CHUNK):
            resp: Any = await self.client.mget(
                index=alias, ids=ids[start : start + MGET_CHUNK], source_includes=["author_name"]
            )
            n += sum(
                1
                for d in resp["docs"]
                if d.get("found") and d["_source"].get("author_name") == name
            )
        return n
