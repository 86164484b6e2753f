"""The rebuild benchmark's resources: pools, client, the in-process live consumer serving the
alias throughout, and phase 1, the seed pages it indexes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import uuid
from typing import Any, Final

import aiomysql
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.config import Settings
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.observability.metrics import Metrics
from searchsync.ops import offsets
from searchsync.projection import registry_from_settings
from searchsync.runtime import run_consumer
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from bench.common import (
    delete_group,
    init_alias,
    metric_total,
    missing,
    open_app_pool,
    page_body,
    progress,
    run_bounded,
    wait_for,
)
from bench.rebuild_backfill import AGGREGATE_TYPE
from bench.rebuild_report import BenchOptions, Report

WRITERS: Final = 16


class Bench:
    def __init__(
        self, settings: Settings, env: dict[str, str], options: BenchOptions, notes: list[str]
    ) -> None:
        self.settings = settings
        self.notes = notes
        self.env = env
        self.options = options
        self.projector = registry_from_settings(settings.projection).get(AGGREGATE_TYPE)
        self.alias = settings.alias(AGGREGATE_TYPE)
        self.prefix = settings.elasticsearch.index_prefix
        self.id_prefix = f"rbench-{uuid.uuid4().hex[:8]}-"
        self.metrics = Metrics()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[Any] | None = None
        self.pool: aiomysql.Pool | None = None
        self.app_pool: aiomysql.Pool | None = None
        self.es: AsyncElasticsearch | None = None
        self.next_id = 0

    @property
    def client(self) -> AsyncElasticsearch:
        assert self.es is not None
        return self.es

    async def open(self) -> None:
        m = self.settings.mysql
        self.pool = await open_pool(m, maxsize=2)
        self.app_pool = await open_app_pool(m, minsize=1, maxsize=WRITERS + 2)
        self.es = make_es_client(self.settings)
        await init_alias(self.es, self.alias, self.projector)
        offsets.reset(self.settings, "latest", dry_run=False)
        self.task = asyncio.create_task(
            run_consumer(self.settings, stop=self.stop, metrics=self.metrics)
        )

        async def assigned() -> bool:
            self.check_alive()
            return metric_total(self.metrics, "searchsync_partitions_assigned") > 0

        await wait_for(assigned, 60, "the live consumer's partitions assigned")

    async def close(self) -> None:
        if self.task is not None:
            self.stop.set()
            try:
                await asyncio.wait_for(self.task, 60)
            except Exception as exc:
                self.notes.append(f"live consumer shutdown: {exc!r}")
        if self.es is not None:
            with contextlib.suppress(NotFoundError):
                got: Any = await self.es.indices.get(index=f"{self.prefix}*")
                for name in got.body:
                    with contextlib.suppress(NotFoundError):
                        await self.es.indices.delete(index=name)
            await self.es.close()
        for pool in (self.pool, self.app_pool):
            if pool is not None:
                await close_pool(pool)
        with contextlib.suppress(Exception):
            delete_group(self.settings.kafka.bootstrap_servers, self.settings.kafka.group_id)

    def check_alive(self) -> None:
        if self.task is not None and self.task.done():
            raise RuntimeError(f"the live consumer exited early: {self.task.result()}")

    def new_ids(self, n: int) -> list[str]:
        first, self.next_id = self.next_id, self.next_id + n
        return [f"{self.id_prefix}{i}" for i in range(first, first + n)]

    async def seed(self, report: Report) -> None:
        assert self.app_pool is not None
        writer = PageWriter(self.app_pool)
        ids = self.new_ids(self.options.rows)

        async def create(page_id: str) -> None:
            title, content, relations = page_body(page_id)
            await writer.create(page_id, title, content, relations)

        t0 = time.monotonic()
        await run_bounded(WRITERS, [functools.partial(create, i) for i in ids])
        report.seed_seconds = time.monotonic() - t0
        progress(f"seeded {len(ids)} pages in {report.seed_seconds:.1f}s")
        outstanding = ids

        async def indexed() -> bool:
            nonlocal outstanding
            self.check_alive()
            outstanding = await missing(self.client, self.alias, outstanding, version=1)
            return not outstanding

        await wait_for(indexed, 180, f"the live consumer to index {len(ids)} pages", interval=0.5)
        progress("the live consumer indexed them")
