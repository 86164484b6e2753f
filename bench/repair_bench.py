"""searchsync's repair benchmark: one full wheel rotation against bare scans, in one run.

    python -m bench.repair_bench [--rows N] [--buckets M] [--json]

Against the real local MariaDB and Elasticsearch, with its own page-id prefix, index prefix and
wheel-state scope, so it never touches other data. Phases, in order:

1. setup: N rows are inserted straight into ``wiki_page`` (the application user, no outbox
   events), read back, projected and bulk-indexed (external versions, ``sync_hash`` present, as
   the consumer writes them) into a fresh index behind the bench's own alias, then refreshed;
2. warm-up: one untimed bare scan of each side (so no phase pays for a cold buffer pool);
3. bare scans: a keyset ``SELECT id, revision`` over the N rows (pages of 5 000) and a
   ``search_after`` scan of the alias over ``_id, source_revision`` (sorted by ``id``, pages of
   5 000), timed, before and after the rotation;
4. rotation: one full `Wheel.rotation()` over every bucket, with the configured wheel settings
   (``[repair]``: bucket count, page sizes, content share) and no load ceilings, in dry-run
   (nothing is appended; a clean data set has no findings anyway); its time is split into MySQL
   page reads, Elasticsearch page reads, wheel-state writes and the rest (compare, projection);
5. live impact (``--lag-seconds`` > 0): a consumer (``python -m consumer run``, its own group
   and index prefix) follows the topic while paced writers (the pipeline bench's child) create
   pages; commit -> searchable is measured once without and once with the repair rotating in a
   child process over the phase-1 rows and index (the same MySQL and Elasticsearch, another
   index, so the live pages are never repair candidates) -> p99 with / without.

Target: rotation <= 1.5 x (MySQL scan + ES scan). It reports numbers and the ratio; it asserts
nothing. Progress goes to stderr, the report (or with ``--json`` one JSON object) to stdout. At
the end the indices and the consumer group are deleted and the phase-1 rows are deleted again
(they never had events, so no index that follows the topic holds them); the live pages of phase 5
(one outbox event each) are left in place, as the pipeline bench leaves its pages.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import inspect
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final

import aiomysql
from confluent_kafka.admin import AdminClient
from elasticsearch import AsyncElasticsearch, NotFoundError

from bench.paced import paced_searchable
from consumer.config import Settings, load_settings
from consumer.devtools.scratch import admin_execute, sync_bucket_migration
from consumer.mysql.outbox import MysqlOutbox
from consumer.mysql.pool import close_pool, create_pool, open_pool
from consumer.ops.repair.es_side import EsIndexSide
from consumer.ops.repair.heal import Healer
from consumer.ops.repair.load import Limits
from consumer.ops.repair.mysql_side import MysqlTruthSide
from consumer.ops.repair.report import BucketReport, RotationReport
from consumer.ops.repair.run import wheel_config
from consumer.ops.repair.state import MysqlWheelState
from consumer.ops.repair.wheel import Wheel
from consumer.projection import Projector, default_registry
from consumer.search.admin import init_index
from consumer.search.client import make_es_client
from consumer.search.es_index import EsIndex
from consumer.search.sink import IndexOp
from consumer.writer import PageWriter

log = logging.getLogger("bench")

AGGREGATE_TYPE: Final = "wiki_page"
RATIO_TARGET: Final = 1.5
SCAN_PAGE: Final = 5_000
INSERT_BATCH: Final = 1_000
INDEX_BATCH: Final = 2_000
RELATIONS: Final = '{"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character"}]}'
POLL_S: Final = 0.05
LIVE_WRITERS: Final = 8
SEARCH_CHUNK: Final = 1_000


@dataclass(frozen=True, slots=True)
class BenchOptions:
    rows: int = 100_000
    buckets: int | None = None  # None: the configured repair.bucket_count
    lag_seconds: float = 20.0  # 0: no live-impact phase
    lag_rate: float = 100.0
    as_json: bool = False
    rotation_child: str | None = None
    own_table: bool = False  # a scratch copy of wiki_page (needs --admin-socket)
    sync_hash_column: bool = False  # the scratch copy with the optional sync_hash migration
    admin_socket: str | None = None
    profile: str | None = None  # write a cProfile of the rotation there

    @property
    def scratch_table(self) -> bool:
        return self.own_table or self.sync_hash_column


@dataclass(slots=True)
class Report:
    command: str
    started_at: str
    host: str
    rows: int
    bucket_count: int = 0
    content_share: float = 0.0
    sync_hash_column: bool = False
    table: str = ""
    insert_seconds: float = 0.0
    index_seconds: float = 0.0
    mysql_scan_seconds: list[float] = field(default_factory=list)
    es_scan_seconds: list[float] = field(default_factory=list)
    mysql_scan_rows: int = 0
    es_scan_docs: int = 0
    rotation_seconds: float = 0.0
    rotation_buckets: int = 0
    rotation_content_buckets: int = 0
    rotation_rows: int = 0
    rotation_docs: int = 0
    rotation_findings: dict[str, int] = field(default_factory=dict)
    rotation_interrupted: int = 0
    bucket_p50_s: float = 0.0
    bucket_max_s: float = 0.0
    rotation_mysql_s: float = 0.0
    rotation_es_s: float = 0.0
    rotation_state_s: float = 0.0
    rotation_other_s: float = 0.0
    lag: dict[str, dict[str, float]] = field(default_factory=dict)
    lag_p99_ratio: float = 0.0
    bare_seconds: float = 0.0
    ratio: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class Timed:
    """A proxy that adds up the time spent in every coroutine method of `inner`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.monotonic()
            try:
                return await attr(*args, **kwargs)
            finally:
                self.seconds += time.monotonic() - t0

        return timed


def bench_projector(table: str) -> Projector:
    """The registry's wiki_page projector, reading `table` (the shared table or a scratch copy;
    the aggregate type, hence every bucket key, stays ``wiki_page``)."""
    return replace(default_registry().get(AGGREGATE_TYPE), table=table)


def build_wheel(
    settings: Settings,
    pool: aiomysql.Pool,
    es: AsyncElasticsearch,
    *,
    table: str,
    sync_hash_column: bool,
    id_prefix: str,
    scope: str,
    buckets: int | None,
    progress_cb: Any = None,
) -> tuple[Wheel, Timed, Timed, Timed]:
    """The wheel as `searchsync repair` builds it (`wheel_config`), limited to the bench's rows
    and state scope, without load ceilings, in dry-run; its sides and state timed."""
    config = wheel_config(settings)
    if buckets is not None:
        config = replace(config, bucket_count=buckets)
    truth = Timed(MysqlTruthSide(pool, sync_hash_column=sync_hash_column, id_prefix=id_prefix))
    index = Timed(EsIndexSide(es))
    state = Timed(MysqlWheelState(pool, scope=scope))
    wheel = Wheel(
        projectors=[bench_projector(table)],
        alias_for=settings.alias,
        truth=truth,
        index=index,
        state=state,
        healer=Healer(MysqlOutbox(pool), appends_per_s=1.0, dry_run=True),
        config=config,
        progress=progress_cb,
        limits=Limits(),
    )
    return wheel, truth, index, state


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
        self.app_pool = await create_pool(
            host=m.host,
            port=m.port,
            user=self.app[0],
            password=self.app[1],
            database=m.database,
            minsize=1,
            maxsize=2,
        )
        self.es = make_es_client(self.settings)
        await init_index(
            self.es,
            self.alias,
            self.projector.mapping,
            schema_version=self.projector.schema_version,
        )

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
                            (_like(self.id_prefix),),
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
                        (_like(self.id_prefix), after, INDEX_BATCH),
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

    # the bare scans

    async def mysql_scan(self) -> tuple[int, float]:
        t0 = time.monotonic()
        seen, after = 0, ""
        while True:
            async with self.consumer_pool.acquire() as conn:
                async with conn.cursor() as cur:
                    await cur.execute(
                        f"SELECT id, revision FROM `{self.table}` WHERE id LIKE %s AND id > %s"
                        " ORDER BY id LIMIT %s",
                        (_like(self.id_prefix), after, SCAN_PAGE),
                    )
                    rows = await cur.fetchall()
                await conn.commit()
            seen += len(rows)
            if len(rows) < SCAN_PAGE:
                return seen, time.monotonic() - t0
            after = str(rows[-1][0])

    async def es_scan(self) -> tuple[int, float]:
        t0 = time.monotonic()
        seen = 0
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "query": {"match_all": {}},
                "sort": [{"id": "asc"}],
                "size": SCAN_PAGE,
                "_source": ["source_revision"],
                "track_total_hits": False,
            }
            if after is not None:
                body["search_after"] = after
            response = await self.client.search(index=self.alias, body=body)
            hits = response.body["hits"]["hits"]
            seen += len(hits)
            if len(hits) < SCAN_PAGE:
                return seen, time.monotonic() - t0
            after = hits[-1]["sort"]

    async def bare_scans(self, label: str) -> None:
        rows, ms = await self.mysql_scan()
        docs, es = await self.es_scan()
        self.report.mysql_scan_seconds.append(ms)
        self.report.es_scan_seconds.append(es)
        self.report.mysql_scan_rows, self.report.es_scan_docs = rows, docs
        progress(f"bare scans ({label}): MySQL {rows} rows {ms:.2f}s, ES {docs} docs {es:.2f}s")

    # the rotation

    async def rotation(self) -> None:
        r = self.report

        def on_bucket(b: BucketReport, n: int, total: int) -> None:
            if n % 8 == 0 or n == total:
                progress(f"rotation: bucket {n}/{total} ({b.rows} rows, {b.seconds:.2f}s)")

        wheel, truth, index, state = build_wheel(
            self.settings,
            self.consumer_pool,
            self.client,
            table=self.table,
            sync_hash_column=self.sync_hash_column,
            id_prefix=self.id_prefix,
            scope=self.scope,
            buckets=self.options.buckets,
            progress_cb=on_bucket,
        )
        config = wheel_config(self.settings)
        r.bucket_count = self.options.buckets or config.bucket_count
        r.content_share = config.content_share
        r.sync_hash_column = self.sync_hash_column
        r.table = self.table
        profiler = cProfile.Profile() if self.options.profile else None
        if profiler is not None:
            profiler.enable()
        report: RotationReport = await wheel.rotation()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(self.options.profile))
            r.notes.append(f"cProfile of the rotation in {self.options.profile} (slows it)")
        r.rotation_seconds = report.seconds
        r.rotation_mysql_s, r.rotation_es_s = truth.seconds, index.seconds
        r.rotation_state_s = state.seconds
        r.rotation_other_s = report.seconds - truth.seconds - index.seconds - state.seconds
        r.rotation_buckets = len(report.buckets)
        r.rotation_content_buckets = sum(1 for b in report.buckets if b.content_checked)
        r.rotation_rows = sum(b.rows for b in report.buckets)
        r.rotation_docs = sum(b.docs for b in report.buckets)
        r.rotation_findings = {k: v for k, v in report.counts().items() if v}
        r.rotation_interrupted = report.interrupted
        seconds = [b.seconds for b in report.buckets] or [0.0]
        r.bucket_p50_s, r.bucket_max_s = statistics.median(seconds), max(seconds)
        progress(f"rotation of {r.rotation_buckets} buckets in {r.rotation_seconds:.2f}s")

    # phase 5: the live consumer's commit -> searchable lag without and with the repair

    async def live_impact(self) -> None:
        o, r = self.options, self.report
        u = uuid.uuid4().hex[:8]
        group, live_prefix = f"bench-{u}", f"benchl{u}"
        live_alias = f"{live_prefix}_{AGGREGATE_TYPE}"
        env = dict(os.environ)
        env.update(
            {
                "SEARCHSYNC_KAFKA_GROUP_ID": group,
                "SEARCHSYNC_KAFKA_DLQ_TOPIC": f"{group}.dlq",
                "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "latest",
                "SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "6000",
                "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": live_prefix,
                "SEARCHSYNC_OBSERVABILITY_METRICS_PORT": "0",
                "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S": "10",
            }
        )
        await init_index(
            self.client,
            live_alias,
            self.projector.mapping,
            schema_version=self.projector.schema_version,
        )
        logfile = tempfile.NamedTemporaryFile(  # noqa: SIM115  # closed in finally
            prefix="repair-bench-consumer-", suffix=".log", delete=False
        )
        consumer = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "consumer", "run", env=env, stdout=logfile, stderr=logfile
        )
        try:
            await self._wait_live(consumer, live_alias, f"benchl-{u}-probe-")
            for label, with_repair in (("without", False), ("with", True)):
                r.lag[label] = await self._lag(
                    live_alias, f"benchl-{u}-{label}-", with_repair, o.lag_rate, o.lag_seconds
                )
                progress(
                    f"lag {label} repair: {r.lag[label]['pages']:.0f} pages,"
                    f" p50 {r.lag[label]['p50_s']:.3f}s p99 {r.lag[label]['p99_s']:.3f}s"
                )
            r.lag_p99_ratio = r.lag["with"]["p99_s"] / max(r.lag["without"]["p99_s"], 1e-9)
        finally:
            if consumer.returncode is None:
                consumer.terminate()
                try:
                    await asyncio.wait_for(consumer.wait(), 60)
                except TimeoutError:
                    consumer.kill()
                    await consumer.wait()
            logfile.close()
            if consumer.returncode not in (0, -15):
                r.notes.append(f"consumer exited with {consumer.returncode}; log {logfile.name}")
            else:
                os.unlink(logfile.name)
            with contextlib.suppress(NotFoundError):
                await self.client.indices.delete(index=f"{live_alias}_v1")
            await asyncio.to_thread(self._delete_group, group)

    def _delete_group(self, group: str) -> None:
        admin = AdminClient({"bootstrap.servers": self.settings.kafka.bootstrap_servers})
        try:
            for future in admin.delete_consumer_groups([group], request_timeout=15).values():
                future.result(timeout=30)
        except Exception as exc:
            self.report.notes.append(f"could not delete consumer group {group}: {exc!r}")

    async def _wait_live(self, consumer: Any, alias: str, prefix: str) -> None:
        """Probe pages until one is searchable: the consumer has joined (it starts at the topic
        end, so a probe written before its assignment is never seen)."""
        assert self.app_pool is not None
        writer = PageWriter(self.app_pool)
        deadline = time.monotonic() + 120
        for n in range(10_000):
            if consumer.returncode is not None:
                raise RuntimeError(f"the consumer exited with {consumer.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError("the consumer did not index a probe page within 120 s")
            probe = f"{prefix}{n}"
            await writer.create(probe, "probe", "probe", {})
            until = time.monotonic() + 3
            while time.monotonic() < until:
                if await self.client.exists(index=alias, id=probe):
                    progress("live consumer is indexing")
                    return
                await asyncio.sleep(0.2)

    async def _lag(
        self, alias: str, prefix: str, with_repair: bool, rate: float, seconds: float
    ) -> dict[str, float]:
        repair: Any = None
        rotations: list[float] = []
        if with_repair:
            spec = {
                "index_prefix": self.settings.elasticsearch.index_prefix,
                "id_prefix": self.id_prefix,
                "scope": self.scope,
                "buckets": self.options.buckets,
                "table": self.table,
                "sync_hash_column": self.sync_hash_column,
            }
            repair = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench.repair_bench",
                "--rotation-child",
                json.dumps(spec),
                stdout=asyncio.subprocess.PIPE,
            )
            assert repair.stdout is not None
            line = await asyncio.wait_for(repair.stdout.readline(), 60)
            if line.strip() != b"READY":
                raise RuntimeError(f"the repair child did not start: {line!r}")

        async def read_rotations() -> None:
            assert repair is not None and repair.stdout is not None
            async for raw in repair.stdout:
                name, _, value = raw.decode().strip().partition(" ")
                if name == "ROTATION":
                    rotations.append(float(value))

        reader = asyncio.create_task(read_rotations()) if repair is not None else None
        spec_w = {
            "prefix": prefix,
            "first": 0,
            "count": max(1, round(rate * seconds)),
            "rate": rate,
            "writers": LIVE_WRITERS,
            "seconds": seconds,
        }
        try:
            run = await paced_searchable(self.client, alias, spec_w)
        finally:
            if repair is not None:
                if repair.returncode is None:
                    repair.terminate()
                await repair.wait()
            if reader is not None:
                await reader
        return {
            **run.summary(),
            "rotations": float(len(rotations)),
            "rotation_s": statistics.mean(rotations) if rotations else 0.0,
        }


async def rotation_child(spec_json: str) -> None:
    """The live phase's repair (run as a child process): rotations back to back until killed,
    printing ``READY`` once and ``ROTATION <seconds>`` per rotation."""
    spec = json.loads(spec_json)
    env = dict(os.environ)
    env["SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX"] = str(spec["index_prefix"])
    settings = load_settings(env)
    pool = await open_pool(settings.mysql, maxsize=2)
    es = make_es_client(settings)
    try:
        wheel, *_ = build_wheel(
            settings,
            pool,
            es,
            table=str(spec["table"]),
            sync_hash_column=bool(spec["sync_hash_column"]),
            id_prefix=str(spec["id_prefix"]),
            scope=str(spec["scope"]),
            buckets=spec["buckets"],
        )
        print("READY", flush=True)
        while True:
            report = await wheel.rotation()
            print(f"ROTATION {report.seconds}", flush=True)
    finally:
        await es.close()
        await close_pool(pool)


def bench_env() -> dict[str, str]:
    env = dict(os.environ)
    env["SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX"] = f"benchr{uuid.uuid4().hex[:8]}"
    return env


async def run(options: BenchOptions, command: str) -> Report:
    settings = load_settings(bench_env())
    report = Report(
        command=command,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        host=f"{platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()})",
        rows=options.rows,
    )
    app = (
        os.environ.get("SEARCHSYNC_APP_MYSQL_USER", "searchsync_app"),
        os.environ.get("SEARCHSYNC_APP_MYSQL_PASSWORD", "searchsync_app"),
    )
    bench = Bench(settings, options, report, app)
    try:
        await bench.open()
        await bench.setup()
        await bench.mysql_scan()  # warm-up, untimed
        await bench.es_scan()
        await bench.bare_scans("before")
        await bench.rotation()
        await bench.bare_scans("after")
        if options.lag_seconds > 0:
            await bench.live_impact()
    finally:
        await bench.close()
    report.bare_seconds = statistics.mean(report.mysql_scan_seconds) + statistics.mean(
        report.es_scan_seconds
    )
    report.ratio = report.rotation_seconds / max(report.bare_seconds, 1e-9)
    if report.rotation_rows != options.rows or report.rotation_docs != options.rows:
        report.notes.append(
            f"the rotation saw {report.rotation_rows} rows and {report.rotation_docs} documents"
            f" of {options.rows}"
        )
    return report


def _runs(xs: Sequence[float]) -> str:
    return "/".join(f"{x:.2f}" for x in xs)


def render_text(r: Report) -> str:
    ms = statistics.mean(r.mysql_scan_seconds) if r.mysql_scan_seconds else 0.0
    es = statistics.mean(r.es_scan_seconds) if r.es_scan_seconds else 0.0
    met = "MET" if r.ratio <= RATIO_TARGET else "MISSED"
    lines = [
        f"searchsync repair benchmark  {r.started_at}  {r.host}",
        f"command: {r.command}",
        "",
        f"setup           {r.rows} rows inserted in {r.insert_seconds:.1f}s,"
        f" indexed in {r.index_seconds:.1f}s",
        f"bare MySQL scan {ms:7.2f}s  (SELECT id, revision, {r.mysql_scan_rows} rows,"
        f" pages of {SCAN_PAGE}; before/after {_runs(r.mysql_scan_seconds)}s)",
        f"bare ES scan    {es:7.2f}s  (search_after over _id, source_revision,"
        f" {r.es_scan_docs} docs, pages of {SCAN_PAGE}; before/after {_runs(r.es_scan_seconds)}s)",
        f"rotation        {r.rotation_seconds:7.2f}s  ({r.rotation_buckets} buckets,"
        f" {r.rotation_content_buckets} with content; {r.rotation_rows} rows,"
        f" {r.rotation_docs} docs; bucket p50 {r.bucket_p50_s:.2f}s max {r.bucket_max_s:.2f}s)",
        f"   wheel: table {r.table}, bucket_count {r.bucket_count},"
        f" content_share {r.content_share},"
        f" sync_hash column {'on' if r.sync_hash_column else 'off'}, no load ceilings, dry-run;"
        f" findings {r.rotation_findings or 'none'}, interrupted {r.rotation_interrupted}",
        f"   time in: MySQL pages {r.rotation_mysql_s:.2f}s, ES pages {r.rotation_es_s:.2f}s,"
        f" wheel state {r.rotation_state_s:.2f}s, rest (compare, projection)"
        f" {r.rotation_other_s:.2f}s",
        f"ratio rotation / (MySQL scan + ES scan)  {r.ratio:.2f}   target <= {RATIO_TARGET}: {met}",
    ]
    for label in ("without", "with"):
        if label in r.lag:
            x = r.lag[label]
            extra = (
                f"; {x['rotations']:.0f} rotations done, mean {x['rotation_s']:.2f}s"
                if label == "with"
                else ""
            )
            lines.append(
                f"live lag {label:7s} repair  p50 {x['p50_s']:.3f}s  p99 {x['p99_s']:.3f}s"
                f"  max {x['max_s']:.3f}s  ({x['pages']:.0f} pages at {x['rate']:.0f}/s,"
                f" {x['unseen']:.0f} never seen{extra})"
            )
    if r.lag:
        lines.append(f"live lag p99 with / without repair  {r.lag_p99_ratio:.2f}")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> BenchOptions:
    parser = argparse.ArgumentParser(prog="python -m bench.repair_bench", description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000, help="rows (and documents)")
    parser.add_argument("--buckets", type=int, help="bucket count (default: repair.bucket_count)")
    parser.add_argument(
        "--lag-seconds", type=float, default=20.0, help="live-lag phase length (0: skip it)"
    )
    parser.add_argument("--lag-rate", type=float, default=100.0, help="live pages per second")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--sync-hash-column",
        action="store_true",
        help="run on a scratch copy of wiki_page with the optional sync_hash migration applied"
        " (needs --admin-socket)",
    )
    parser.add_argument(
        "--own-table",
        action="store_true",
        help="run on a scratch copy of wiki_page without the column (needs --admin-socket)",
    )
    parser.add_argument(
        "--admin-socket",
        default=os.environ.get("SEARCHSYNC_BENCH_ADMIN_SOCKET"),
        help="MariaDB unix socket where root may create the scratch table"
        " (default: $SEARCHSYNC_BENCH_ADMIN_SOCKET; the local stack's is"
        " <repo>/.stack/mariadb/mysqld.sock)",
    )
    parser.add_argument("--profile", help="write a cProfile of the rotation to this file")
    parser.add_argument("--rotation-child", help=argparse.SUPPRESS)  # the live phase's repair
    args = parser.parse_args(argv)
    if (args.sync_hash_column or args.own_table) and not args.admin_socket:
        parser.error("--sync-hash-column / --own-table need --admin-socket")
    if args.rows < 1:
        parser.error("--rows must be >= 1")
    if args.buckets is not None and args.buckets < 1:
        parser.error("--buckets must be >= 1")
    if args.lag_rate <= 0:
        parser.error("--lag-rate must be > 0")
    return BenchOptions(
        rows=args.rows,
        buckets=args.buckets,
        lag_seconds=args.lag_seconds,
        lag_rate=args.lag_rate,
        as_json=args.json,
        rotation_child=args.rotation_child,
        own_table=args.own_table,
        sync_hash_column=args.sync_hash_column,
        admin_socket=args.admin_socket,
        profile=args.profile,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if options.rotation_child is not None:
        asyncio.run(rotation_child(options.rotation_child))
        return 0
    command = " ".join([".venv/bin/python -m bench.repair_bench", *argv])
    report = asyncio.run(run(options, command))
    print(report.to_json() if options.as_json else render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
