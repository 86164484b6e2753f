"""The repair benchmark's resources (pools, client, the optional scratch table) and phase 1: the
rows inserted straight into the table and their documents indexed."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import aiomysql
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.config import Settings
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.projection import Projector
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.search.sink import IndexOp

from bench.common import init_alias, open_app_pool, progress
from bench.repair_report import BenchOptions, Report
from bench.repair_wheel import AGGREGATE_TYPE, bench_projector
from tests.scratch import admin_execute, sync_bucket_migration

INSERT_BATCH: Final = 1_000
INDEX_BATCH: Final = 2_000
RELATIONS: Final = '{"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character"}]}'


def like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Bench:
    """Owns the run's resources (pools, client) and its phases."""

    def __init__(
        self, settings: Settings, options: BenchOptions, report: Report, app: tuple[str, str]
    ) -> None:
        u = uuid.uuid4().hex[:8]
        self.settings = settings
        self.options = options
        self.report = report
        self.app = app
        self.table = f"benchr{u}_{AGGREGATE_TYPE}" if options.scratch_table else AGGREGATE_TYPE
        self.sync_hash_column = (
            options.sync_hash_column
            if options.scratch_table
            else settings.repair.mysql_sync_hash_column
        )
        self.projector: Projector = bench_projector(self.table)
        self.alias = settings.alias(AGGREGATE_TYPE)
        self.id_prefix = f"benchr-{u}-"
        self.scope = f"bench{u}/"
        self.pool: aiomysql.Pool | None = None
        self.app_pool: aiomysql.Pool | None = None
        self.es: AsyncElasticsearch | None = None
        self.inserted = False
        self.table_created = False

    @property
    def client(self) -> AsyncElasticsearch:
        assert self.es is not None
        return self.es

    @property
    def consumer_pool(self) -> aiomysql.Pool:
        assert self.pool is not None
        return self.pool

    async def _admin(self, statements: Sequence[str]) -> None:
        """Run DDL/grants as the local stack's root over its unix socket (the scratch table)."""
        assert self.options.admin_socket is not None
        await admin_execute(self.options.admin_socket, self.settings.mysql.database, statements)

    async def create_table(self) -> None:
        """The scratch copy of wiki_page, with the optional migration applied when asked (its
        own text, with the table and index names of the copy), and the grants the two users
        have on wiki_page."""
        t, m = self.table, self.settings.mysql
        statements = [f"CREATE TABLE `{t}` LIKE `{AGGREGATE_TYPE}`"]
        if self.sync_hash_column:
            statements.append(sync_bucket_migration(t))
        statements += [
            f"GRANT SELECT ON `{t}` TO '{m.user}'@'%'",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{t}` TO '{self.app[0]}'@'%'",
        ]
        self.table_created = True
        await self._admin(statements)
        progress(
            f"scratch table {t} created"
            f" (sync_hash column {'on' if self.sync_hash_column else 'off'})"
        )

    async def open(self) -> None:
        m = self.settings.mysql
        if self.options.scratch_table:
            await self.create_table()
        self.pool = await open_pool(m, maxsize=2)
        self.app_pool = await open_app_pool(m, minsize=1, maxsize=2)
        self.es = make_es_client(self.settings)
        await init_alias(self.es, self.alias, self.projector)

    async def close(self) -> None:
        if self.es is not None:
            with contextlib.suppress(NotFoundError):
                await self.es.indices.delete(index=f"{self.alias}_v1")
            await self.es.close()
        if self.app_pool is not None:
            if self.inserted and not self.table_created:
                try:
                    async with self.app_pool.acquire() as conn, conn.cursor() as cur:
                        await cur.execute(
                            f"DELETE FROM `{self.table}` WHERE id LIKE %s",
                            (like(self.id_prefix),),
                        )
                        await conn.commit()
                except Exception as exc:
                    self.report.notes.append(f"could not delete the bench rows: {exc!r}")
            await close_pool(self.app_pool)
        if self.pool is not None:
            await close_pool(self.pool)
        if self.table_created:
            try:
                await self._admin([f"DROP TABLE IF EXISTS `{self.table}`"])
            except Exception as exc:
                self.report.notes.append(f"could not drop {self.table}: {exc!r}")

    # phase 1: rows and their documents

    async def setup(self) -> None:
        assert self.app_pool is not None
        n = self.options.rows
        t0 = time.monotonic()
        now = datetime.now(UTC).replace(tzinfo=None)
        async with self.app_pool.acquire() as conn, conn.cursor() as cur:
            self.inserted = True
            for start in range(0, n, INSERT_BATCH):
                batch = [
                    (f"{self.id_prefix}{i:07d}", f"page {i}", f"body of page {i}", RELATIONS, now)
                    for i in range(start, min(n, start + INSERT_BATCH))
                ]
                await cur.executemany(
                    f"INSERT INTO `{self.table}` (id, title, content, relations_json, revision,"
                    " updated_at) VALUES (%s, %s, %s, %s, 1, %s)",
                    batch,
                )
                await conn.commit()
                if (start // INSERT_BATCH) % 20 == 19:
                    progress(f"inserted {start + len(batch)}/{n} rows")
        self.report.insert_seconds = time.monotonic() - t0
        progress(f"inserted {n} rows in {self.report.insert_seconds:.1f}s")

        t1 = time.monotonic()
        sink = EsIndex(self.client)
        columns = ", ".join(f"`{c}`" for c in self.projector.columns)
        after = ""
        indexed = errors = 0
        while True:
            async with self.consumer_pool.acquire() as conn:
                async with conn.cursor(aiomysql.DictCursor) as cur:
                    await cur.execute(
                        f"SELECT {columns} FROM `{self.table}` WHERE id LIKE %s AND id > %s"
                        " ORDER BY id LIMIT %s",
                        (like(self.id_prefix), after, INDEX_BATCH),
                    )
                    rows: list[dict[str, Any]] = list(await cur.fetchall())
                await conn.commit()
            if not rows:
                break
            after = str(rows[-1]["id"])
            ops = [IndexOp.from_document(self.alias, self.projector.project(r)) for r in rows]
            results = await sink.bulk_index(ops)
            errors += sum(1 for r in results if not 200 <= r.status < 300)
            indexed += len(ops)
            if indexed % 20_000 < INDEX_BATCH:
                progress(f"indexed {indexed}/{n} documents")
        await self.client.indices.refresh(index=self.alias)
        self.report.index_seconds = time.monotonic() - t1
        if errors:
            self.report.notes.append(f"setup: {errors} documents failed to index")
        progress(f"indexed {indexed} documents in {self.report.index_seconds:.1f}s")
