"""searchsync's pipeline benchmark: every number measured side by side in one run.

    python -m bench.pipeline_bench [--events N] [--json]

Against the real local stack (MariaDB, Debezium, Kafka, Elasticsearch), with its own consumer
group, index prefix and page-id prefix, so it never touches other data. Phases, in order:

1. throughput: N pages are created (one UPSERT event each) while no consumer runs; once Debezium
   has published all N events, `run_consumer` starts in-process and is timed from its first
   partition assignment until every document is in Elasticsearch at revision 1 (realtime mget);
2. raw ceiling: the same N rows, read once from MySQL and projected, are bulk-indexed directly
   into a fresh index (same mapping, external versions, 500 per bulk, 2 bulks in flight as the
   pipeline's ``max_concurrent_batches``) -> the ratio pipeline / raw;
3. commit -> searchable lag: paced writers (a child process, so their CPU does not queue behind
   the consumer's event loop) create pages at half the measured pipeline rate while a poller
   ``_search``-es the outstanding ids every 50 ms (so refresh_interval, 1 s by default, is part
   of the lag); a Kafka tap and a realtime mget split it into Debezium / consumer / refresh;
4. hot key: 100 updates of one page in a burst -> Elasticsearch item writes they cost;
5. memory: VmRSS / VmHWM of this process, which hosts the consumer.

It reports numbers and whether each target is met; it asserts nothing. Progress goes to stderr,
the report (or with ``--json`` one JSON object) to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import logging
import math
import os
import platform
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, cast

import aiomysql
import orjson
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from elasticsearch import AsyncElasticsearch, NotFoundError

from consumer.app import run_consumer
from consumer.config import Settings, load_settings
from consumer.kafka.admin import ConfluentKafkaAdmin
from consumer.mysql.pool import create_pool
from consumer.mysql.truth import MysqlTruth
from consumer.observability.metrics import Metrics
from consumer.ops import offsets
from consumer.projection import Document, Projector, default_registry
from consumer.search.admin import init_index
from consumer.search.client import make_es_client
from consumer.writer import PageWriter

log = logging.getLogger("bench")

AGGREGATE_TYPE: Final = "wiki_page"
RATIO_TARGET: Final = 0.8
LAG_P99_TARGET_S: Final = 2.0
HOT_KEY_UPDATES: Final = 100
BULK_SIZE: Final = 500  # the consumer's default elasticsearch.bulk_max_actions
BULK_IN_FLIGHT: Final = 2  # the pipeline's default max_concurrent_batches
MGET_CHUNK: Final = 1_000
POLL_S: Final = 0.05
WRITERS: Final = 16


@dataclass(frozen=True, slots=True)
class BenchOptions:
    events: int = 3_000
    lag_seconds: float = 10.0
    lag_writers: int = WRITERS
    as_json: bool = False
    paced_writer: str | None = None


@dataclass(slots=True)
class Report:
    """Everything the run measured; `to_json` is what ``--json`` prints."""

    command: str
    started_at: str
    host: str
    events: int
    # phase 1
    write_seconds: float = math.nan
    write_rate: float = math.nan
    kafka_ready_seconds: float = math.nan
    consumer_startup_seconds: float = math.nan
    first_doc_after_assign_seconds: float = math.nan
    pipeline_seconds: float = math.nan
    pipeline_rate: float = math.nan
    pipeline_rate_from_first_doc: float = math.nan
    events_consumed: int = 0
    pipeline_bulk_requests: int = 0
    # phase 2
    mysql_reread_seconds: float = math.nan
    project_seconds: float = math.nan
    raw_seconds: float = math.nan
    raw_rate: float = math.nan
    raw_errors: int = 0
    ratio: float = math.nan
    # phase 3
    lag_target_rate: float = math.nan
    lag_achieved_rate: float = math.nan
    lag_pages: int = 0
    lag_p50_s: float = math.nan
    lag_p99_s: float = math.nan
    lag_max_s: float = math.nan
    lag_unseen: int = 0
    lag_kafka_p50_s: float = math.nan  # commit -> event readable in Kafka (Debezium)
    lag_kafka_p99_s: float = math.nan
    lag_written_p50_s: float = math.nan  # commit -> write acknowledged by ES (realtime get)
    lag_written_p99_s: float = math.nan
    # phase 4
    hot_key_updates: int = HOT_KEY_UPDATES
    hot_key_es_writes: float = math.nan
    hot_key_bulk_requests: float = math.nan
    hot_key_events_consumed: float = math.nan
    # phase 5
    rss_mib: float = math.nan
    hwm_mib: float = math.nan
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        def clean(value: Any) -> Any:
            return None if isinstance(value, float) and not math.isfinite(value) else value

        return json.dumps({k: clean(v) for k, v in asdict(self).items()}, ensure_ascii=False)


# -- small helpers (copied in spirit from tests/integration/consumer_harness.py) --------------


async def wait_for(
    check: Callable[[], Awaitable[bool]], deadline_s: float, what: str, interval: float = 0.05
) -> None:
    """Wait until `check()` holds; raise TimeoutError naming `what` at the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(interval)
    raise TimeoutError(f"timed out after {deadline_s}s waiting for: {what}")


def topic_ends(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    """The current high watermark of each partition (once each has a leader)."""
    marks = ConfluentKafkaAdmin({"bootstrap.servers": bootstrap}).watermarks(topic)
    return {p: marks[p].high for p in partitions}


def metric_total(metrics: Metrics, name: str) -> float:
    """The sum of every sample called `name` (all label sets), 0 when absent."""
    total = 0.0
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name:
                total += float(sample.value)
    return total


def proc_status_mib(key: str) -> float:
    """A ``kB`` line of /proc/self/status (VmRSS, VmHWM) in MiB; NaN where there is no /proc."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def page_body(page_id: str) -> tuple[str, str, dict[str, list[dict[str, str]]]]:
    """A page of realistic size (~1 KiB of mixed Chinese/ASCII text, two relations)."""
    index = sum(page_id.encode())
    title = f"基准页面 {index} {page_id}"
    content = ("吕布 貂蝉 董卓 王允 连环计 " * 20) + f" page {index}"
    relations = {
        "RELATED_CHARACTER": [
            {"entity_id": f"c{index % 17}", "entity_type": "character", "title": "主角"}
        ],
        "RELATED_PLACE": [{"entity_id": f"p{index % 5}", "entity_type": "place", "title": "长安"}],
    }
    return title, content, relations


async def run_bounded(concurrency: int, jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Run `jobs` with at most `concurrency` in flight; the first error wins."""
    it = iter(jobs)

    async def worker() -> None:
        for job in it:
            await job()

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())


# -- the run ----------------------------------------------------------------------------------


class Bench:
    """Owns the run's resources (pool, client, consumer task) and its phases."""

    def __init__(
        self,
        settings: Settings,
        options: BenchOptions,
        report: Report,
        app_user: tuple[str, str],
    ) -> None:
        self.settings = settings
        self.options = options
        self.report = report
        self.projector: Projector = default_registry().get(AGGREGATE_TYPE)
        self.alias = settings.alias(AGGREGATE_TYPE)
        self.raw_alias = f"{settings.elasticsearch.index_prefix}raw_{AGGREGATE_TYPE}"
        self.topic = settings.kafka.topics[0]
        self.id_prefix = f"bench-{uuid.uuid4().hex[:8]}-"
        self.metrics = Metrics()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[int] | None = None
        self.pool: aiomysql.Pool | None = None
        self.app_pool: aiomysql.Pool | None = None
        self.app_user = app_user
        self.es: AsyncElasticsearch | None = None
        self._ids = itertools.count()

    # resources

    async def open(self) -> None:
        m = self.settings.mysql
        # Two users as in production: the application writes, the consumer user only reads.
        self.app_pool = await create_pool(
            host=m.host,
            port=m.port,
            user=self.app_user[0],
            password=self.app_user[1],
            database=m.database,
            minsize=1,
            maxsize=WRITERS + 4,
        )
        self.pool = await create_pool(
            host=m.host,
            port=m.port,
            user=m.user,
            password=m.password.reveal(),
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
        await init_index(
            self.es,
            self.raw_alias,
            self.projector.mapping,
            schema_version=self.projector.schema_version,
        )

    async def close(self) -> None:
        if self.task is not None:
            self.stop.set()
            try:
                code = await asyncio.wait_for(self.task, 60)
                if code != 0:
                    self.report.notes.append(f"consumer exited with {code}")
            except Exception as exc:
                self.report.notes.append(f"consumer shutdown: {exc!r}")
        if self.es is not None:
            for alias in (self.alias, self.raw_alias):
                with contextlib.suppress(NotFoundError):
                    await self.es.indices.delete(index=f"{alias}_v1")
            await self.es.close()
        for pool in (self.pool, self.app_pool):
            if pool is not None:
                pool.close()
                await pool.wait_closed()
        with contextlib.suppress(Exception):
            admin = AdminClient({"bootstrap.servers": self.settings.kafka.bootstrap_servers})
            for future in admin.delete_consumer_groups([self.settings.kafka.group_id]).values():
                future.result(timeout=10)

    @property
    def client(self) -> AsyncElasticsearch:
        assert self.es is not None
        return self.es

    @property
    def writer(self) -> PageWriter:
        assert self.app_pool is not None
        return PageWriter(self.app_pool)

    def new_ids(self, n: int) -> list[str]:
        return [f"{self.id_prefix}{next(self._ids)}" for _ in range(n)]

    async def create(self, writer: PageWriter, page_id: str) -> None:
        title, content, relations = page_body(page_id)
        await writer.create(page_id, title, content, relations)

    # phase 1: pipeline throughput

    async def throughput(self) -> list[str]:
        r, n = self.report, self.options.events
        k = self.settings.kafka
        report = offsets.reset(self.settings, "latest", dry_run=False)
        start_ends = {step.partition: step.target for step in report.steps}
        ids = self.new_ids(n)
        writer = self.writer
        t0 = time.monotonic()
        await run_bounded(WRITERS, [functools.partial(self.create, writer, i) for i in ids])
        r.write_seconds = time.monotonic() - t0
        r.write_rate = n / r.write_seconds
        progress(f"wrote {n} pages in {r.write_seconds:.2f}s ({r.write_rate:.0f}/s)")

        async def in_kafka() -> bool:
            ends = await asyncio.to_thread(
                topic_ends, k.bootstrap_servers, self.topic, [*start_ends]
            )
            return sum(ends.values()) - sum(start_ends.values()) >= n

        await wait_for(in_kafka, 120, f"{n} events published by Debezium", interval=0.2)
        r.kafka_ready_seconds = time.monotonic() - t0
        progress(f"all {n} events in Kafka {r.kafka_ready_seconds:.2f}s after the first write")

        started = time.monotonic()
        self.task = asyncio.create_task(
            run_consumer(self.settings, stop=self.stop, metrics=self.metrics)
        )

        async def assigned() -> bool:
            self._check_alive()
            return metric_total(self.metrics, "searchsync_partitions_assigned") > 0

        await wait_for(assigned, 60, "partitions assigned", interval=0.005)
        t_assign = time.monotonic()
        r.consumer_startup_seconds = t_assign - started
        first_doc: list[float] = []
        outstanding = list(ids)

        async def all_indexed() -> bool:
            nonlocal outstanding
            self._check_alive()
            if not first_doc and metric_total(self.metrics, "es_bulk_item_success_total") > 0:
                first_doc.append(time.monotonic())
            if _finished(self.metrics) < n and time.monotonic() - t_assign < 60:
                return False  # cheap in-process gate before asking Elasticsearch
            outstanding = await self.missing(self.alias, outstanding, version=1)
            return not outstanding

        await wait_for(all_indexed, 180, f"{n} documents indexed", interval=0.005)
        done = time.monotonic()
        r.pipeline_seconds = done - t_assign
        r.pipeline_rate = n / r.pipeline_seconds
        r.first_doc_after_assign_seconds = (first_doc[0] if first_doc else done) - t_assign
        r.pipeline_rate_from_first_doc = n / max(
            1e-9, done - (first_doc[0] if first_doc else t_assign)
        )
        r.events_consumed = int(metric_total(self.metrics, "searchsync_events_consumed_total"))
        r.pipeline_bulk_requests = int(metric_total(self.metrics, "es_write_latency_seconds_count"))
        if r.events_consumed > n:
            r.notes.append(
                f"the consumer took {r.events_consumed} events (> {n}): other writers shared the"
                " topic during the throughput phase"
            )
        progress(f"pipeline indexed {n} in {r.pipeline_seconds:.2f}s ({r.pipeline_rate:.0f}/s)")
        return ids

    def _check_alive(self) -> None:
        if self.task is not None and self.task.done():
            raise RuntimeError(f"the consumer exited early: {self.task.result()}")

    async def missing(self, alias: str, ids: Sequence[str], *, version: int) -> list[str]:
        """The ids not yet in `alias` at `version` or later (realtime mget, in chunks)."""
        left: list[str] = []
        for start in range(0, len(ids), MGET_CHUNK):
            chunk = list(ids[start : start + MGET_CHUNK])
            resp: Any = await self.client.mget(index=alias, ids=chunk, source=False)
            for doc in resp["docs"]:
                if not doc.get("found") or int(doc["_version"]) < version:
                    left.append(doc["_id"])
        return left

    # phase 2: raw Elasticsearch ceiling

    async def raw_ceiling(self, ids: list[str]) -> None:
        r = self.report
        assert self.pool is not None
        t0 = time.monotonic()
        rows = await MysqlTruth(self.pool).rows_by_id(self.projector, ids)
        r.mysql_reread_seconds = time.monotonic() - t0
        t1 = time.monotonic()
        docs = [self.projector.project(rows[i]) for i in ids if i in rows]
        r.project_seconds = time.monotonic() - t1
        chunks = [docs[s : s + BULK_SIZE] for s in range(0, len(docs), BULK_SIZE)]
        errors = 0

        async def send(chunk: list[Document]) -> None:
            nonlocal errors
            lines: list[bytes] = []
            for doc in chunk:
                meta = {
                    "_index": self.raw_alias,
                    "_id": doc.doc_id,
                    "version": doc.source_revision,
                    "version_type": "external",
                }
                lines.append(orjson.dumps({"index": meta}))
                lines.append(doc.to_json())
            resp: Any = await self.client.bulk(
                operations=cast(Any, lines), require_alias=True, filter_path="items.*.status"
            )
            errors += sum(1 for item in resp["items"] if next(iter(item.values()))["status"] >= 300)

        t2 = time.monotonic()
        await run_bounded(BULK_IN_FLIGHT, [functools.partial(send, c) for c in chunks])
        r.raw_seconds = time.monotonic() - t2
        r.raw_rate = len(docs) / r.raw_seconds
        r.raw_errors = errors + (len(ids) - len(docs))
        r.ratio = r.pipeline_rate / r.raw_rate
        progress(f"raw bulk of {len(docs)} in {r.raw_seconds:.2f}s ({r.raw_rate:.0f}/s)")

    # phase 3: commit -> searchable lag at half the peak rate

    async def lag(self) -> None:
        r, o = self.report, self.options
        rate = 0.5 * r.pipeline_rate
        total = max(1, round(rate * o.lag_seconds))
        r.lag_target_rate = rate
        first = next(self._ids)
        for _ in range(total - 1):
            next(self._ids)
        committed: dict[str, float] = {}
        written: dict[str, float] = {}  # acknowledged by ES (realtime mget)
        seen: dict[str, float] = {}  # visible to _search (after a refresh)
        bounds: dict[str, float] = {}
        tap = KafkaTap(self.settings.kafka.bootstrap_servers, self.topic, self.id_prefix)
        tap.start()
        # The first search of an idle shard waits for a refresh: get that out of the way.
        await self.client.search(index=self.alias, size=0)
        # The writers run in a child process so that their CPU does not queue behind the
        # consumer on this event loop; CLOCK_MONOTONIC is shared by both processes.
        spec = {"prefix": self.id_prefix, "first": first, "count": total, "rate": rate}
        spec["writers"] = o.lag_writers
        spec["seconds"] = o.lag_seconds
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.pipeline_bench",
            "--paced-writer",
            json.dumps(spec),
            stdout=asyncio.subprocess.PIPE,
        )

        async def read_commits() -> None:
            assert child.stdout is not None
            async for raw in child.stdout:
                name, _, at = raw.decode().strip().partition(" ")
                if name in ("START", "END"):
                    bounds[name] = float(at)
                elif at:
                    committed[name] = float(at)

        writers_done = asyncio.Event()

        async def poller() -> None:
            while not (writers_done.is_set() and len(seen) == len(committed)):
                unwritten = [i for i in committed if i not in written]
                for start in range(0, len(unwritten), MGET_CHUNK):
                    chunk = unwritten[start : start + MGET_CHUNK]
                    got: Any = await self.client.mget(index=self.alias, ids=chunk, source=False)
                    now = time.monotonic()
                    for doc in got["docs"]:
                        if doc.get("found"):
                            written.setdefault(doc["_id"], now)
                unseen = [i for i in committed if i not in seen]
                for start in range(0, len(unseen), MGET_CHUNK):
                    chunk = unseen[start : start + MGET_CHUNK]
                    resp: Any = await self.client.search(
                        index=self.alias,
                        query={"ids": {"values": chunk}},
                        size=len(chunk),
                        source=False,
                    )
                    now = time.monotonic()
                    for hit in resp["hits"]["hits"]:
                        seen.setdefault(hit["_id"], now)
                await asyncio.sleep(POLL_S)

        poll_task = asyncio.create_task(poller())
        try:
            await read_commits()
            code = await child.wait()
            if code != 0:
                r.notes.append(f"lag phase: the writer process exited with {code}")
            writers_done.set()
            await asyncio.wait_for(asyncio.shield(poll_task), 30)
        except TimeoutError:
            r.notes.append("lag phase: some pages were not searchable within 30 s")
        finally:
            poll_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poll_task
            if child.returncode is None:
                child.kill()
                await child.wait()
            await asyncio.to_thread(tap.close)
        lags = [seen[i] - committed[i] for i in committed if i in seen]
        in_kafka = [tap.arrivals[i] - committed[i] for i in committed if i in tap.arrivals]
        acked = [written[i] - committed[i] for i in committed if i in written]
        r.lag_kafka_p50_s, r.lag_kafka_p99_s = quantile(in_kafka, 0.5), quantile(in_kafka, 0.99)
        r.lag_written_p50_s, r.lag_written_p99_s = quantile(acked, 0.5), quantile(acked, 0.99)
        r.lag_pages = len(committed)
        r.lag_unseen = len(committed) - len(lags)
        span = bounds.get("END", math.nan) - bounds.get("START", math.nan)
        r.lag_achieved_rate = len(committed) / span if span > 0 else math.nan
        r.lag_p50_s = quantile(lags, 0.5)
        r.lag_p99_s = quantile(lags, 0.99)
        r.lag_max_s = max(lags) if lags else math.nan
        if not r.lag_achieved_rate >= 0.9 * rate:
            r.notes.append(
                f"lag phase: writers reached {r.lag_achieved_rate:.0f}/s of {rate:.0f}/s asked"
            )
        progress(f"lag: {len(lags)} pages, p50 {r.lag_p50_s:.3f}s p99 {r.lag_p99_s:.3f}s")

    # phase 4: hot key

    async def quiet(self) -> None:
        """Wait until every event the consumer took in has finished."""

        async def settled() -> bool:
            self._check_alive()
            consumed = metric_total(self.metrics, "searchsync_events_consumed_total")
            return _finished(self.metrics) >= consumed

        await wait_for(settled, 30, "the consumer to finish what it took in")

    async def hot_key(self, page_id: str) -> None:
        r = self.report
        await self.quiet()
        before = self._write_counters()
        writer = self.writer
        revision = 0
        for n in range(HOT_KEY_UPDATES):
            revision = await writer.update(page_id, content=f"hot update {n}")

        async def at_revision() -> bool:
            self._check_alive()
            return not await self.missing(self.alias, [page_id], version=revision)

        await wait_for(at_revision, 60, f"{page_id} at revision {revision}")
        await self.quiet()
        after = self._write_counters()
        r.hot_key_es_writes = after[0] - before[0]
        r.hot_key_bulk_requests = after[1] - before[1]
        r.hot_key_events_consumed = after[2] - before[2]
        if r.hot_key_events_consumed > HOT_KEY_UPDATES:
            r.notes.append("hot key: other writers' events were consumed during the burst")
        progress(f"hot key: {HOT_KEY_UPDATES} updates cost {r.hot_key_es_writes:.0f} ES writes")

    def _write_counters(self) -> tuple[float, float, float]:
        m = self.metrics
        items = metric_total(m, "es_bulk_item_success_total") + metric_total(
            m, "es_version_conflict_total"
        )
        return (
            items,
            metric_total(m, "es_write_latency_seconds_count"),
            metric_total(m, "searchsync_events_consumed_total"),
        )


def _finished(metrics: Metrics) -> float:
    return metric_total(metrics, "searchsync_event_outcomes_total")


class KafkaTap:
    """Notes when each event of the bench's pages becomes readable in Kafka (a thread polling
    all partitions from their current end, no group, no commits)."""

    def __init__(self, bootstrap: str, topic: str, key_prefix: str) -> None:
        self.arrivals: dict[str, float] = {}
        self._prefix = key_prefix.encode()
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-tap-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        parts = self._consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = topic_ends(bootstrap, topic, list(parts))
        self._consumer.assign([TopicPartition(topic, p, o) for p, o in ends.items()])
        self._thread = threading.Thread(target=self._run, name="bench-kafka-tap", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for msg in self._consumer.consume(500, 0.05):
                key = msg.key()
                if msg.error() is None and key is not None and key.startswith(self._prefix):
                    self.arrivals.setdefault(key.decode(), time.monotonic())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


async def paced_writer_child(spec_json: str) -> None:
    """The lag phase's writers (run as a child process): create up to ``count`` pages at
    ``rate``/s from ``writers`` concurrent writers for at most ``seconds``, printing
    ``<id> <monotonic commit time>`` per page."""
    spec = json.loads(spec_json)
    prefix, first, count = str(spec["prefix"]), int(spec["first"]), int(spec["count"])
    rate, writers = float(spec["rate"]), int(spec["writers"])
    seconds = float(spec["seconds"])
    m = load_settings(dict(os.environ)).mysql
    pool = await create_pool(
        host=m.host,
        port=m.port,
        user=os.environ.get("SEARCHSYNC_APP_MYSQL_USER", "searchsync_app"),
        password=os.environ.get("SEARCHSYNC_APP_MYSQL_PASSWORD", "searchsync_app"),
        database=m.database,
        minsize=writers,
        maxsize=writers,
    )
    writer = PageWriter(pool)
    slots = itertools.count()
    t0 = time.monotonic() + 0.1
    print(f"START {t0}", flush=True)

    async def one_writer() -> None:
        while (i := next(slots)) < count:
            await asyncio.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            if time.monotonic() > t0 + seconds:
                return  # behind schedule: keep the phase at its length, report the real rate
            page_id = f"{prefix}{first + i}"
            title, content, relations = page_body(page_id)
            await writer.create(page_id, title, content, relations)
            print(f"{page_id} {time.monotonic()}", flush=True)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(writers):
                group.create_task(one_writer())
        print(f"END {time.monotonic()}", flush=True)
    finally:
        pool.close()
        await pool.wait_closed()


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def bench_env(overrides: dict[str, str]) -> dict[str, str]:
    """The process environment plus the bench's own group, prefix and metrics port."""
    u = uuid.uuid4().hex[:8]
    env = dict(os.environ)
    env.update(
        {
            "SEARCHSYNC_KAFKA_GROUP_ID": f"bench-{u}",
            "SEARCHSYNC_KAFKA_DLQ_TOPIC": f"bench-{u}.dlq",
            "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "latest",
            "SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"bench{u}",
            "SEARCHSYNC_OBSERVABILITY_METRICS_PORT": "0",
            "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S": "10",
            "SEARCHSYNC_PIPELINE_LAG_POLL_INTERVAL_S": "5",
        }
    )
    env.update(overrides)
    return env


async def run(options: BenchOptions, command: str) -> Report:
    settings = load_settings(bench_env({}))
    report = Report(
        command=command,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        host=f"{platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()})",
        events=options.events,
    )
    app_user = (
        os.environ.get("SEARCHSYNC_APP_MYSQL_USER", "searchsync_app"),
        os.environ.get("SEARCHSYNC_APP_MYSQL_PASSWORD", "searchsync_app"),
    )
    bench = Bench(settings, options, report, app_user)
    try:
        await bench.open()
        ids = await bench.throughput()
        await bench.raw_ceiling(ids)
        await bench.lag()
        await bench.hot_key(ids[0])
        report.rss_mib = proc_status_mib("VmRSS")
        report.hwm_mib = proc_status_mib("VmHWM")
    finally:
        await bench.close()
    return report


def _met(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def render_text(r: Report) -> str:
    lines = [
        f"searchsync pipeline benchmark  {r.started_at}  {r.host}",
        f"command: {r.command}",
        "",
        f"1. pipeline throughput      {r.pipeline_rate:9.0f} events/s"
        f"  ({r.events} events in {r.pipeline_seconds:.2f}s from first partition assignment;"
        f" {r.pipeline_rate_from_first_doc:.0f}/s from the first written doc)",
        f"   {r.pipeline_bulk_requests} bulk requests"
        f" (avg {r.events / max(1, r.pipeline_bulk_requests):.0f} docs/bulk);"
        f" consumer start-up (excluded) {r.consumer_startup_seconds:.2f}s;"
        f" first doc {r.first_doc_after_assign_seconds:.2f}s after assignment",
        f"   writers (16 concurrent)  {r.write_rate:9.0f} pages/s;"
        f" all events in Kafka {r.kafka_ready_seconds:.2f}s after the first write",
        f"2. raw ES bulk ceiling      {r.raw_rate:9.0f} docs/s"
        f"  ({BULK_SIZE}/bulk, {BULK_IN_FLIGHT} in flight, {r.raw_errors} errors)",
        f"   ratio pipeline/raw       {r.ratio:9.2f}   target >= {RATIO_TARGET}:"
        f" {_met(r.ratio >= RATIO_TARGET)}",
        f"   (MySQL re-read of {r.events} rows {r.mysql_reread_seconds * 1000:.0f} ms,"
        f" projection {r.project_seconds * 1000:.0f} ms)",
        f"3. commit->searchable lag   p50 {r.lag_p50_s:.3f}s  p99 {r.lag_p99_s:.3f}s"
        f"  max {r.lag_max_s:.3f}s   target p99 <= {LAG_P99_TARGET_S}s:"
        f" {_met(r.lag_p99_s <= LAG_P99_TARGET_S)}",
        f"   of which: commit->in Kafka p50 {r.lag_kafka_p50_s:.3f}s p99 {r.lag_kafka_p99_s:.3f}s;"
        f" commit->ES write acked p50 {r.lag_written_p50_s:.3f}s p99 {r.lag_written_p99_s:.3f}s",
        f"   {r.lag_pages} pages at {r.lag_achieved_rate:.0f}/s"
        f" (asked {r.lag_target_rate:.0f}/s = 0.5 x pipeline); {r.lag_unseen} never seen;"
        " includes ES refresh_interval (1 s default)",
        f"4. hot key                  {r.hot_key_es_writes:.0f} ES item writes per"
        f" {r.hot_key_updates} updates ({r.hot_key_bulk_requests:.0f} bulk requests,"
        f" {r.hot_key_events_consumed:.0f} events consumed)",
        f"5. consumer memory          VmRSS {r.rss_mib:.0f} MiB, VmHWM (peak) {r.hwm_mib:.0f} MiB"
        "  (consumer in-process: includes the bench's own state)",
    ]
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> BenchOptions:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_bench", description=__doc__)
    parser.add_argument("--events", type=int, default=3_000, help="pages for the throughput run")
    parser.add_argument("--lag-seconds", type=float, default=10.0, help="paced-write duration")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--paced-writer", help=argparse.SUPPRESS)  # the lag phase's child
    args = parser.parse_args(argv)
    if args.events < 1:
        parser.error("--events must be >= 1")
    return BenchOptions(
        events=args.events,
        lag_seconds=args.lag_seconds,
        as_json=args.json,
        paced_writer=args.paced_writer,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if options.paced_writer is not None:
        asyncio.run(paced_writer_child(options.paced_writer))
        return 0
    command = " ".join([".venv/bin/python -m bench.pipeline_bench", *argv])
    report = asyncio.run(run(options, command))
    print(report.to_json() if options.as_json else render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
