"""The phases of `bench.load_bench`: the rows, the load as a child process (its RSS watched), the
raw bulk of the same documents, the load in parts, and a full repair rotation."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import aiomysql
import orjson
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.config import Settings
from searchsync.mysql.key_scope import KeyScope
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.mysql.pool import close_pool, open_pool, transaction
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.repair.generations import MysqlWheelState
from searchsync.ops.repair.load import Limits
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel
from searchsync.projection import Projector, registry_from_settings
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import BulkSizer, EsIndex
from searchsync.search.sink import IndexOp

from bench.common import init_alias, open_app_pool, progress
from bench.procstat import status_mib
from bench.rebuild_backfill import raw_bulk

if TYPE_CHECKING:
    from bench.load_bench import Report

REPO: Final = Path(__file__).resolve().parents[1]
BATCH: Final = 2_000
TAGS: Final = ("rules", "lore", "游戏", "map", "boss", "guide")
READ_PAGE: Final = 5_000


class LoadBench:
    def __init__(self, settings: Settings, env: dict[str, str], prefix: str, report: Report):
        self.settings = settings
        self.env = env
        self.prefix = prefix
        self.report = report
        self.projector: Projector = registry_from_settings(settings.projection).get("article")
        self.alias = settings.alias("article")
        self.where = f"id LIKE '{prefix}%'"
        self.pool: aiomysql.Pool | None = None
        self.app_pool: aiomysql.Pool | None = None
        self.es: AsyncElasticsearch | None = None
        self.indices: list[str] = []
        self._stderr: dict[int, Any] = {}

    async def open(self) -> None:
        self.pool = await open_pool(self.settings.mysql, maxsize=2)
        self.app_pool = await open_app_pool(self.settings.mysql, minsize=1, maxsize=4)
        self.es = make_es_client(self.settings)

    async def close(self) -> None:
        if self.es is not None:
            for pattern in self.indices:
                with contextlib.suppress(NotFoundError):
                    await self.es.indices.delete(index=pattern)
            await self.es.close()
        if self.app_pool is not None:
            like = (f"{self.prefix}%",)
            try:
                async with transaction(self.app_pool) as conn, conn.cursor() as cur:
                    await cur.execute("DELETE FROM article_tag WHERE article_id LIKE %s", like)
                    await cur.execute("DELETE FROM article WHERE id LIKE %s", like)
                    await cur.execute("DELETE FROM author WHERE id LIKE %s", like)
            except Exception as exc:
                self.report.notes.append(f"could not delete the bench rows: {exc!r}")
            await close_pool(self.app_pool)
        if self.pool is not None:
            await close_pool(self.pool)

    # phase 1

    async def setup(self, n: int) -> None:
        """`n` articles with 3 tags each and an author per 100, no outbox events."""
        assert self.app_pool is not None and self.es is not None
        now = datetime.now(UTC).replace(tzinfo=None)
        p = self.prefix
        authors = [(f"{p}a{k:05d}", f"author {k}", 1, None, now) for k in range(n // 100 + 1)]
        await self._insert(
            "author", ("id", "name", "revision", "deleted_at", "updated_at"), authors
        )
        body = "body " * 40
        columns = ("id", "title", "body", "author_id", "revision", "deleted_at", "updated_at")

        def batch(start: int) -> tuple[list[Any], list[Any]]:
            ids = range(start, min(n, start + BATCH))
            articles = [
                (f"{p}{i:07d}", f"article {i}", body, f"{p}a{i // 100:05d}", 1 + i % 3,
                 now if i % 20 == 0 else None, now)
                for i in ids
            ]  # fmt: skip
            tags = [(f"{p}{i:07d}", k, TAGS[(i + k) % len(TAGS)]) for i in ids for k in range(3)]
            return articles, tags

        step = 4 * BATCH  # four transactions at once, each built when its turn comes
        for start in range(0, n, step):
            batches = [batch(b) for b in range(start, min(n, start + step), BATCH)]
            await asyncio.gather(
                *(self._insert("article", columns, a, "article_tag", t) for a, t in batches)
            )
            if (start // step) % 10 == 9 or start + step >= n:
                progress(f"setup: {min(n, start + step)}/{n} articles")
        await init_alias(self.es, self.alias, self.projector)
        self.indices.append(f"{self.alias}_v*")

    async def _insert(
        self, table: str, columns: tuple[str, ...], rows: list[Any], *more: Any
    ) -> None:
        assert self.app_pool is not None
        async with transaction(self.app_pool) as conn, conn.cursor() as cur:
            for t, cols, values in ((table, columns, rows), *_pairs(more)):
                marks = "(" + ", ".join(["%s"] * len(cols)) + ")"
                sql = f"INSERT INTO {t} ({', '.join(cols)}) VALUES " + ", ".join(
                    [marks] * len(values)
                )
                await cur.execute(sql, [v for row in values for v in row])

    # phase 2 and 4

    def _spawn(self, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
        profile = os.environ.get("SEARCHSYNC_BENCH_LOAD_CPROFILE")  # a development aid
        python = [sys.executable, *(["-m", "cProfile", "-o", profile] if profile else [])]
        argv = [*python, "-m", "searchsync", "index", "load", "--type", "article"]
        argv += ["--where", self.where, "--no-wait", "--json", *args]
        errors = tempfile.TemporaryFile()  # noqa: SIM115 - the child's stderr, read on failure
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=errors)
        self._stderr[proc.pid] = errors
        return proc

    async def _finish(
        self, proc: subprocess.Popen[bytes], rss: list[float]
    ) -> tuple[dict[str, Any], float, float]:
        """The child's summary, its peak RSS (MB) and its CPU seconds (user + system), sampling
        its RSS into `rss` meanwhile."""
        waiting = asyncio.create_task(asyncio.to_thread(os.wait4, proc.pid, 0))
        while not waiting.done():
            mib = status_mib(proc.pid, "VmRSS")
            if not math.isnan(mib):  # NaN: the child is gone
                rss.append(mib)
            await asyncio.wait({waiting}, timeout=0.5)
        _, code, usage = await waiting
        proc.returncode = os.waitstatus_to_exitcode(code)
        assert proc.stdout is not None
        out = proc.stdout.read()
        errors = self._stderr.pop(proc.pid)
        errors.seek(0)
        tail = errors.read()[-2000:].decode(errors="replace")
        errors.close()
        if proc.returncode != 0:
            raise RuntimeError(f"the load exited with {proc.returncode}: {tail}")
        return orjson.loads(out), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime

    async def load_once(self) -> None:
        r = self.report
        t0 = time.monotonic()
        summary, peak, cpu = await self._finish(self._spawn(self.env), r.load_rss_mb)
        r.load_cpu_s = cpu
        r.load_wall_s = time.monotonic() - t0
        r.load_rows, r.load_s = int(summary["rows_this_run"]), float(summary["seconds"])
        r.load_peak_rss_mb = peak
        progress(f"load: {r.load_rows} rows in {r.load_s:.1f}s, peak RSS {peak:.0f} MB")

    async def load_in_parts(self, k: int, index_prefix: str) -> None:
        assert self.es is not None
        r = self.report
        env = {**self.env, "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": index_prefix}
        alias = f"{index_prefix}_article"
        await init_alias(self.es, alias, self.projector)
        self.indices.append(f"{alias}_v*")
        t0 = time.monotonic()
        procs = [self._spawn(env, "--part", f"{i}/{k}") for i in range(k)]
        done = await asyncio.gather(*(self._finish(p, []) for p in procs))
        r.parts_wall_s = time.monotonic() - t0
        r.parts_rows = sum(int(s["rows_this_run"]) for s, _, _ in done)
        r.parts_peak_rss_mb = [peak for _, peak, _ in done]
        progress(f"{k} parts: {r.parts_rows} rows in {r.parts_wall_s:.1f}s")

    # phase 3

    async def raw_bulk(self) -> None:
        """The load's documents, read and projected again untimed, bulk-indexed (timed) into a
        fresh index with the same body, one request in flight."""
        assert self.pool is not None and self.es is not None
        r, e = self.report, self.settings.elasticsearch
        target = f"{self.alias}_raw"
        self.indices.append(target)
        await EsIndexAdmin(self.es).create_index(target, self.projector.mapping, meta={})
        truth, scope = MysqlTruth(self.pool), KeyScope(where=self.where)
        sizer = BulkSizer(e.bulk_max_actions, e.bulk_max_bytes)
        after: str | None = None
        while rows := await truth.scan(self.projector, after, READ_PAGE, scope=scope):
            after = str(rows[-1]["id"])
            ops = [IndexOp.from_document(target, self.projector.project(row)) for row in rows]
            seconds, _, errors = await raw_bulk(self.es, ops, sizer, 1)
            r.raw_docs, r.raw_s, r.raw_errors = (
                r.raw_docs + len(ops),
                r.raw_s + seconds,
                r.raw_errors + errors,
            )
        progress(f"raw bulk: {r.raw_docs} docs in {r.raw_s:.1f}s")

    # phase 5

    async def rotation(self) -> None:
        assert self.pool is not None and self.es is not None
        r = self.report
        await self.es.indices.refresh(index=self.alias)
        wheel = Wheel(
            projectors=[self.projector],
            alias_for=self.settings.alias,
            truth=MysqlTruth(self.pool, id_prefix=self.prefix),
            index=EsIndex(self.es),
            state=MysqlWheelState(self.pool, scope=f"lbench-{self.prefix}"),
            healer=Healer(MysqlOutbox(self.pool), appends_per_s=1.0, dry_run=True),
            settings=replace(self.settings.repair, content_share=1.0),
            tombstone_minimum=self.settings.retention.tombstone_minimum,
            limits=Limits(),
        )
        report = await wheel.rotation()
        r.rotation_s = report.seconds
        r.rotation_rows = sum(b.rows for b in report.buckets)
        r.rotation_docs = sum(b.docs for b in report.buckets)
        r.rotation_findings = len(report.findings())
        progress(f"repair rotation: {r.rotation_s:.1f}s, {r.rotation_findings} findings")


def _pairs(more: tuple[Any, ...]) -> list[tuple[str, tuple[str, ...], list[Any]]]:
    """(table, columns, rows) of the extra tables `_insert` writes: article_tag's rows."""
    if not more:
        return []
    table, rows = more
    return [(table, ("article_id", "position", "tag"), rows)]
