"""searchsync's rebuild benchmark: the backfill against a raw bulk, and the live lag during it.

    python -m bench.rebuild_bench [--rows N] [--lag-seconds S] [--lag-rate R] [--json]

Against the real local stack, with its own consumer group, index prefix and page-id prefix. A live
consumer (`run_consumer`, in-process) serves ``<alias>`` (``<alias>_v1``) throughout. Phases:

1. seed: N pages of our own are created through `PageWriter` (the shared ``wiki_page`` table
   already holds rows from tests; the rebuild scans them all) and the live consumer indexes them;
2. backfill: the rebuild's `Backfill` (keyset scan, adaptive chunks, the projector, external
   versions through `EsIndex(require_alias=False)`) fills ``<alias>_v2``, created as the rebuild
   creates it (bulk-load settings, rebuild ``_meta``), over the **whole** table, timed;
3. raw: exactly the ops the backfill sent (same ids, versions and bodies) are bulk-indexed with
   the bare client into a scratch index with the same body, in the same bulk sizes, one request
   in flight as the backfill (and, for reference, two) -> the ratio backfill / raw;
4. lag without a rebuild: paced writers (`bench.pipeline_bench`'s child process) create pages at
   ``--lag-rate`` for ``--lag-seconds`` while a poller ``_search``-es the alias for them every
   50 ms: commit -> searchable p50/p99;
5. lag during a rebuild: the same, while a child process (a separate process, as
   ``searchsync rebuild`` is) runs backfill passes over the whole table into fresh indices until
   the window ends.

It reports numbers and whether the targets are met; it asserts nothing. Progress goes to stderr,
the report (or with ``--json`` one JSON object) to stdout. It deletes the indices and the group it
created; the MySQL rows are left (deleting them without outbox events would make other indices
drift).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import math
import os
import platform
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, cast

import aiomysql
from confluent_kafka.admin import AdminClient
from elasticsearch import AsyncElasticsearch, NotFoundError

from bench.paced import paced_searchable
from bench.pipeline_bench import (
    MGET_CHUNK,
    bench_env,
    metric_total,
    page_body,
    progress,
    run_bounded,
    wait_for,
)
from consumer.app import run_consumer
from consumer.config import Settings, load_settings
from consumer.mysql.pool import close_pool, create_pool, open_pool
from consumer.mysql.truth import MysqlTruth
from consumer.observability.metrics import Metrics
from consumer.ops import offsets
from consumer.ops.chunks import ChunkController
from consumer.ops.rebuild import plan as plans
from consumer.ops.rebuild.backfill import Backfill, ChunkDone
from consumer.projection import Projector, Row, registry_from_settings
from consumer.search.admin import init_index
from consumer.search.client import make_es_client
from consumer.search.elasticsearch import EsIndexAdmin
from consumer.search.es_index import BulkSizer, EncodedBulk, EsIndex
from consumer.search.sink import IndexOp, ItemResult, Sink
from consumer.writer import PageWriter

AGGREGATE_TYPE: Final = "wiki_page"
RATIO_TARGET: Final = 0.9
WRITERS: Final = 16


@dataclass(frozen=True, slots=True)
class BenchOptions:
    rows: int = 10_000
    lag_seconds: float = 15.0
    lag_rate: float = 100.0
    lag_writers: int = 8
    as_json: bool = False
    backfill_child: str | None = None


@dataclass(slots=True)
class Report:
    command: str
    started_at: str
    host: str
    rows_seeded: int
    seed_seconds: float = math.nan
    # backfill (whole table)
    table_rows: int = 0
    backfill_rows: int = 0  # scanned, failed included
    backfill_indexed: int = 0  # documents written: the rows' plus the floor tombstones
    backfill_tombstones: int = 0
    backfill_failed: int = 0
    backfill_chunks: int = 0
    backfill_bulks: int = 0
    backfill_seconds: float = math.nan
    backfill_scan_seconds: float = math.nan  # MySQL keyset scans
    backfill_write_seconds: float = math.nan  # bulk requests (EsIndex)
    backfill_rows_per_s: float = math.nan  # failed rows counted
    backfill_docs_per_s: float = math.nan
    # raw bulk of exactly the backfill's ops
    raw_docs: int = 0
    raw_bulks: int = 0
    raw_errors: int = 0
    raw_seconds: float = math.nan
    raw_docs_per_s: float = math.nan
    raw2_seconds: float = math.nan  # two requests in flight, for reference
    raw2_docs_per_s: float = math.nan
    ratio: float = math.nan  # backfill docs/s / raw docs/s (same documents, same bulk sizes)
    ratio_vs_raw2: float = math.nan
    # lag
    lag: dict[str, dict[str, float]] = field(default_factory=dict)
    lag_p99_ratio: float = math.nan
    rebuild_passes: int = 0
    rebuild_rows_during_lag: int = 0
    rebuild_rows_per_s_under_load: float = math.nan
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            return None if isinstance(value, float) and not math.isfinite(value) else value

        return json.dumps({k: clean(v) for k, v in asdict(self).items()}, ensure_ascii=False)


class RecordingIndex(EsIndex):
    """The backfill's writer (`EsIndex`, physical index), keeping the ops it was given so that
    the raw bulk can send exactly the same documents, and counting and timing its bulk
    requests."""

    def __init__(self, client: AsyncElasticsearch, sizer: BulkSizer, *, keep: bool) -> None:
        super().__init__(client, sizer=sizer, require_alias=False)
        self.ops: list[IndexOp] = []
        self.bulks = 0
        self.seconds = 0.0
        self._keep = keep

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        if self._keep:
            self.ops.extend(ops)
        return await super().bulk_index(ops)

    async def _bulk(self, bulk: EncodedBulk) -> list[ItemResult]:
        self.bulks += 1
        t0 = time.monotonic()
        try:
            return await super()._bulk(bulk)
        finally:
            self.seconds += time.monotonic() - t0


class TimedTruth(MysqlTruth):
    """`MysqlTruth` that adds up the time its keyset scans take."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        super().__init__(pool)
        self.scan_seconds = 0.0

    async def scan(self, projector: Projector, after_id: str | None, limit: int) -> list[Row]:
        t0 = time.monotonic()
        try:
            return await super().scan(projector, after_id, limit)
        finally:
            self.scan_seconds += time.monotonic() - t0


@dataclass(slots=True)
class PassResult:
    rows: int = 0
    indexed: int = 0
    failed: int = 0
    chunks: int = 0
    bulks: int = 0
    seconds: float = math.nan
    scan_seconds: float = math.nan
    write_seconds: float = math.nan
    complete: bool = False
    tombstones: int = 0  # the floor pass's tombstones (written after the row scan)
    ops: list[IndexOp] = field(default_factory=list)


async def backfill_pass(
    settings: Settings,
    es: AsyncElasticsearch,
    truth: TimedTruth,
    projector: Projector,
    target: str,
    *,
    keep: bool,
    deadline: float | None = None,
) -> PassResult:
    """Create `target` as the rebuild does and fill it with the rebuild's `Backfill` over the
    whole table (or until `deadline`, CLOCK_MONOTONIC); only the fill is timed."""
    alias = settings.alias(projector.aggregate_type)
    meta = plans.rebuild_meta(projector.schema_version, f"bench-{target}", {}, f"{alias}_v1")
    await EsIndexAdmin(es).create_index(target, plans.index_body(projector.mapping), meta=meta)
    r, e = settings.rebuild, settings.elasticsearch
    writer = RecordingIndex(es, BulkSizer(e.bulk_max_actions, e.bulk_max_bytes), keep=keep)
    out = PassResult()

    async def on_chunk(chunk: ChunkDone) -> None:
        out.rows += chunk.rows
        out.indexed += chunk.indexed
        out.failed += chunk.failed
        out.chunks += 1

    backfill = Backfill(
        truth=truth,
        sink=Sink(writer),
        projector=projector,
        target_index=target,
        chunks=ChunkController(
            r.chunk_min,
            r.chunk_max,
            r.chunk_target_s,
            r.chunk_initial,
            r.chunk_max_step,
            quantum=e.bulk_max_actions,
        ),
        on_chunk=on_chunk,
    )
    after: str | None = None
    t0 = time.monotonic()
    if deadline is None:
        result = await backfill.run(after_id=None)
        out.complete, out.tombstones = result.complete, result.tombstones
    else:
        while time.monotonic() < deadline:
            step = await backfill.run(after_id=after, stop_after_chunks=1)
            if step.complete:
                out.complete = True
                break
            after = step.last_id
    out.seconds = time.monotonic() - t0
    out.bulks = writer.bulks
    out.scan_seconds, out.write_seconds = truth.scan_seconds, writer.seconds
    out.ops = writer.ops
    return out


async def raw_bulk(
    es: AsyncElasticsearch, ops: Sequence[IndexOp], sizer: BulkSizer, in_flight: int
) -> tuple[float, int, int]:
    """Bulk `ops` with the bare client, `sizer`'s bulk sizes, `in_flight` requests at a time:
    (seconds, bulk requests, item errors)."""
    chunks = list(sizer.chunks(ops))
    errors = 0

    async def send(chunk: list[IndexOp]) -> None:
        nonlocal errors
        lines: list[bytes] = []
        for op in chunk:
            lines.append(op.action_json())
            lines.append(op.body_json)
        resp: Any = await es.bulk(operations=cast(Any, lines), filter_path="items.*.status")
        errors += sum(1 for item in resp["items"] if next(iter(item.values()))["status"] >= 300)

    t0 = time.monotonic()
    await run_bounded(in_flight, [functools.partial(send, c) for c in chunks])
    return time.monotonic() - t0, len(chunks), errors


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
        self.app_pool = await create_pool(
            host=m.host,
            port=m.port,
            user=os.environ.get("SEARCHSYNC_APP_MYSQL_USER", "searchsync_app"),
            password=os.environ.get("SEARCHSYNC_APP_MYSQL_PASSWORD", "searchsync_app"),
            database=m.database,
            minsize=1,
            maxsize=WRITERS + 2,
        )
        self.es = make_es_client(self.settings)
        await init_index(
            self.es,
            self.alias,
            self.projector.mapping,
            schema_version=self.projector.schema_version,
        )
        offsets.reset(self.settings, "latest", dry_run=False)
        self.task = asyncio.create_task(
            run_consumer(self.settings, stop=self.stop, metrics=self.metrics)
        )

        async def assigned() -> bool:
            self._check_alive()
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
            admin = AdminClient({"bootstrap.servers": self.settings.kafka.bootstrap_servers})
            for future in admin.delete_consumer_groups([self.settings.kafka.group_id]).values():
                future.result(timeout=10)

    def _check_alive(self) -> None:
        if self.task is not None and self.task.done():
            raise RuntimeError(f"the live consumer exited early: {self.task.result()}")

    def new_ids(self, n: int) -> list[str]:
        first, self.next_id = self.next_id, self.next_id + n
        return [f"{self.id_prefix}{i}" for i in range(first, first + n)]

    async def missing(self, ids: Sequence[str]) -> list[str]:
        left: list[str] = []
        for start in range(0, len(ids), MGET_CHUNK):
            resp: Any = await self.client.mget(
                index=self.alias, ids=list(ids[start : start + MGET_CHUNK]), source=False
            )
            left += [d["_id"] for d in resp["docs"] if not d.get("found")]
        return left

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
            self._check_alive()
            outstanding = await self.missing(outstanding)
            return not outstanding

        await wait_for(indexed, 180, f"the live consumer to index {len(ids)} pages", interval=0.5)
        progress("the live consumer indexed them")

    async def backfill_vs_raw(self, report: Report) -> None:
        """Phases 1 and 2 in a child process (`compare`), as ``searchsync rebuild`` runs apart
        from the live consumers: the in-process live consumer, indexing whatever the shared
        topic carries, would otherwise take CPU from the backfill's event loop and not from the
        raw bulk's, which barely needs any."""
        progress(f"backfill of the whole table into {self.alias}_v2, then the raw bulk")
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.rebuild_bench",
            "--backfill-child",
            json.dumps({"compare": True}),
            stdout=asyncio.subprocess.PIPE,
            env=self.env,
        )
        out, _ = await asyncio.wait_for(child.communicate(), 600)
        if child.returncode != 0:
            raise RuntimeError(f"the backfill/raw child exited with {child.returncode}")
        [line] = [x for x in out.decode().splitlines() if x.startswith("{")]
        for name, value in json.loads(line).items():
            setattr(report, name, value)
        progress(
            f"backfill: {report.backfill_rows} rows in {report.backfill_seconds:.2f}s; raw bulk:"
            f" {report.raw_docs} docs in {report.raw_seconds:.2f}s; ratio {report.ratio:.2f}"
        )

    async def measure_lag(self, label: str, report: Report, *, with_rebuild: bool) -> None:
        o = self.options
        count = max(1, round(o.lag_rate * o.lag_seconds))
        ids = self.new_ids(count)
        first = int(ids[0].rsplit("-", 1)[1])
        await self.client.search(index=self.alias, size=0)  # wake an idle shard's refresh
        rebuild: asyncio.subprocess.Process | None = None
        passes: list[dict[str, Any]] = []
        if with_rebuild:
            child_spec = json.dumps({"seconds": o.lag_seconds + 1.5})
            rebuild = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bench.rebuild_bench",
                "--backfill-child",
                child_spec,
                stdout=asyncio.subprocess.PIPE,
                env=self.env,
            )
            assert rebuild.stdout is not None
            line = await asyncio.wait_for(rebuild.stdout.readline(), 60)
            if line.strip() != b"START":
                raise RuntimeError(f"the rebuild child did not start: {line!r}")
        spec = {"prefix": self.id_prefix, "first": first, "count": count, "rate": o.lag_rate}
        spec.update({"writers": o.lag_writers, "seconds": o.lag_seconds})
        try:
            run = await paced_searchable(
                self.client, self.alias, spec, env=self.env, check=self._check_alive
            )
        finally:
            if rebuild is not None:
                assert rebuild.stdout is not None
                out, _ = await asyncio.wait_for(rebuild.communicate(), 120)
                passes = [json.loads(x) for x in out.decode().splitlines() if x.startswith("{")]
        if run.writer_exit:
            report.notes.append(f"{label}: the writer process exited with {run.writer_exit}")
        if run.timed_out:
            report.notes.append(f"{label}: some pages were not searchable within 30 s")
        report.lag[label] = run.summary()
        if passes:
            report.rebuild_passes = len(passes)
            report.rebuild_rows_during_lag = sum(int(p["rows"]) for p in passes)
            seconds = sum(float(p["seconds"]) for p in passes)
            report.rebuild_rows_per_s_under_load = report.rebuild_rows_during_lag / seconds
        elif with_rebuild:
            report.notes.append(f"{label}: the rebuild child reported no pass")
        progress(f"{label}: p99 {report.lag[label]['p99_s']:.3f}s over {len(run.lags)} pages")


async def compare(
    settings: Settings, es: AsyncElasticsearch, pool: aiomysql.Pool, projector: Projector
) -> dict[str, Any]:
    """Phase 1, the backfill of the whole table into ``<alias>_v2``, then phase 2, the raw bulk
    of exactly the documents it wrote, side by side in this process: the `Report` fields."""
    alias, prefix = settings.alias(AGGREGATE_TYPE), settings.elasticsearch.index_prefix
    truth = TimedTruth(pool)
    r: dict[str, Any] = {"table_rows": await truth.count(projector)}
    p = await backfill_pass(settings, es, truth, projector, f"{alias}_v2", keep=True)
    docs = p.indexed + p.tombstones
    r.update(backfill_rows=p.rows, backfill_indexed=docs, backfill_tombstones=p.tombstones)
    r.update(backfill_failed=p.failed, backfill_chunks=p.chunks, backfill_bulks=p.bulks)
    r.update(backfill_seconds=p.seconds, backfill_scan_seconds=p.scan_seconds)
    r.update(backfill_write_seconds=p.write_seconds)
    r.update(backfill_rows_per_s=p.rows / p.seconds, backfill_docs_per_s=docs / p.seconds)
    last: dict[str, IndexOp] = {op.doc_id: op for op in p.ops}  # a retried op counts once
    e = settings.elasticsearch
    sizer = BulkSizer(e.bulk_max_actions, e.bulk_max_bytes)
    body = plans.index_body(projector.mapping)
    admin = EsIndexAdmin(es)
    results: list[tuple[float, int, int]] = []
    for in_flight in (1, 2):
        scratch = f"{prefix}raw{in_flight}_{AGGREGATE_TYPE}_v1"
        await admin.create_index(scratch, body)
        ops = [IndexOp(scratch, o.doc_id, o.version, o.body_json) for o in last.values()]
        results.append(await raw_bulk(es, ops, sizer, in_flight))
    (raw_s, bulks, errors), (raw2_s, _, _) = results
    r.update(raw_docs=len(last), raw_bulks=bulks, raw_errors=errors)
    r.update(raw_seconds=raw_s, raw_docs_per_s=len(last) / raw_s)
    r.update(raw2_seconds=raw2_s, raw2_docs_per_s=len(last) / raw2_s)
    r.update(ratio=r["backfill_docs_per_s"] / r["raw_docs_per_s"])
    r.update(ratio_vs_raw2=r["backfill_docs_per_s"] / r["raw2_docs_per_s"])
    return r


async def backfill_child(spec_json: str) -> None:
    """The rebuild during the second lag window (a child process, as ``searchsync rebuild``):
    backfill passes over the whole table into fresh indices until ``seconds`` have passed;
    prints ``START``, then one JSON line per pass. With ``compare`` instead: phases 1 and 2
    (`compare`), one JSON line."""
    spec = json.loads(spec_json)
    settings = load_settings(dict(os.environ))
    projector = registry_from_settings(settings.projection).get(AGGREGATE_TYPE)
    alias = settings.alias(AGGREGATE_TYPE)
    pool = await open_pool(settings.mysql, maxsize=2)
    es = make_es_client(settings)
    try:
        if spec.get("compare"):
            print(json.dumps(await compare(settings, es, pool, projector)), flush=True)
            return
        seconds = float(spec["seconds"])
        print("START", flush=True)
        deadline = time.monotonic() + seconds
        version = 10
        while time.monotonic() < deadline:
            target = f"{alias}_v{version}"
            p = await backfill_pass(
                settings, es, TimedTruth(pool), projector, target, keep=False, deadline=deadline
            )
            await es.indices.delete(index=target)
            stats = {"rows": p.rows, "seconds": p.seconds, "complete": p.complete}
            print(json.dumps(stats), flush=True)
            version += 1
    finally:
        await es.close()
        await close_pool(pool)


async def run(options: BenchOptions, command: str) -> Report:
    env = bench_env({})
    settings = load_settings(env)
    report = Report(
        command=command,
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        host=f"{platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()})",
        rows_seeded=options.rows,
    )
    bench = Bench(settings, env, options, report.notes)
    try:
        await bench.open()
        await bench.seed(report)
        await bench.backfill_vs_raw(report)
        await bench.measure_lag("without rebuild", report, with_rebuild=False)
        await bench.measure_lag("during rebuild", report, with_rebuild=True)
        base, during = report.lag["without rebuild"], report.lag["during rebuild"]
        report.lag_p99_ratio = during["p99_s"] / base["p99_s"]
    finally:
        await bench.close()
    return report


def render_text(r: Report) -> str:
    met = "MET" if r.ratio >= RATIO_TARGET else "MISSED"
    lines = [
        f"searchsync rebuild benchmark  {r.started_at}  {r.host}",
        f"command: {r.command}",
        "",
        f"seed: {r.rows_seeded} new pages in {r.seed_seconds:.1f}s; the table holds"
        f" {r.table_rows} rows",
        f"1. backfill (whole table)  {r.backfill_rows_per_s:8.0f} rows/s"
        f"  ({r.backfill_rows} rows in {r.backfill_seconds:.2f}s, {r.backfill_failed} refused"
        f" by the projector and counted; {r.backfill_chunks} chunks, {r.backfill_bulks} bulks)",
        f"   documents written       {r.backfill_docs_per_s:8.0f} docs/s  ({r.backfill_indexed},"
        f" {r.backfill_tombstones} of them floor tombstones);"
        f" bulk requests {r.backfill_write_seconds:.2f}s of the {r.backfill_seconds:.2f}s, MySQL"
        f" scans {r.backfill_scan_seconds:.2f}s (read ahead, overlapping the bulks)",
        f"2. raw bulk, same docs     {r.raw_docs_per_s:8.0f} docs/s"
        f"  ({r.raw_docs} docs in {r.raw_seconds:.2f}s, {r.raw_bulks} bulks, 1 in flight,"
        f" {r.raw_errors} errors); 2 in flight {r.raw2_docs_per_s:.0f} docs/s",
        f"   ratio backfill/raw      {r.ratio:8.2f}   target >= {RATIO_TARGET}: {met}"
        f"   (vs 2 in flight {r.ratio_vs_raw2:.2f})",
    ]
    for n, (label, lag) in enumerate(r.lag.items(), start=3):
        lines.append(
            f"{n}. commit->searchable {label:16s} p50 {lag['p50_s']:.3f}s  p99 {lag['p99_s']:.3f}s"
            f"  max {lag['max_s']:.3f}s  ({lag['pages']:.0f} pages at {lag['rate']:.0f}/s,"
            f" {lag['unseen']:.0f} never seen)"
        )
    lines.append(
        f"   p99 during/without      {r.lag_p99_ratio:8.2f}   (rebuild: {r.rebuild_passes}"
        f" backfill passes, {r.rebuild_rows_during_lag} rows at"
        f" {r.rebuild_rows_per_s_under_load:.0f} rows/s in a separate process)"
    )
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> BenchOptions:
    parser = argparse.ArgumentParser(prog="python -m bench.rebuild_bench", description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="new pages to seed")
    parser.add_argument("--lag-seconds", type=float, default=15.0, help="each lag window")
    parser.add_argument("--lag-rate", type=float, default=100.0, help="paced pages/s")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--backfill-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows < 1 or args.lag_seconds <= 0 or args.lag_rate <= 0:
        parser.error("--rows, --lag-seconds and --lag-rate must be positive")
    return BenchOptions(
        rows=args.rows,
        lag_seconds=args.lag_seconds,
        lag_rate=args.lag_rate,
        as_json=args.json,
        backfill_child=args.backfill_child,
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if options.backfill_child is not None:
        asyncio.run(backfill_child(options.backfill_child))
        return 0
    command = " ".join([".venv/bin/python -m bench.rebuild_bench", *argv])
    report = asyncio.run(run(options, command))
    print(report.to_json() if options.as_json else render_text(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
