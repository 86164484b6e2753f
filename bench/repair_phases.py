"""The repair benchmark's timed phases: the bare scans of each side and one full rotation."""

from __future__ import annotations

import cProfile
import statistics
import time
from typing import Any

from searchsync.ops.repair.model import BucketReport, RotationReport

from bench.common import progress
from bench.repair_report import SCAN_PAGE
from bench.repair_setup import Bench, like
from bench.repair_wheel import build_wheel


async def mysql_scan(bench: Bench) -> tuple[int, float]:
    t0 = time.monotonic()
    seen, after = 0, ""
    while True:
        async with bench.consumer_pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute(
                    f"SELECT id, revision FROM `{bench.table}` WHERE id LIKE %s AND id > %s"
                    " ORDER BY id LIMIT %s",
                    (like(bench.id_prefix), after, SCAN_PAGE),
                )
                rows = await cur.fetchall()
            await conn.commit()
        seen += len(rows)
        if len(rows) < SCAN_PAGE:
            return seen, time.monotonic() - t0
        after = str(rows[-1][0])


async def es_scan(bench: Bench) -> tuple[int, float]:
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
        response = await bench.client.search(index=bench.alias, body=body)
        hits = response.body["hits"]["hits"]
        seen += len(hits)
        if len(hits) < SCAN_PAGE:
            return seen, time.monotonic() - t0
        after = hits[-1]["sort"]


async def bare_scans(bench: Bench, label: str) -> None:
    rows, ms = await mysql_scan(bench)
    docs, es = await es_scan(bench)
    bench.report.mysql_scan_seconds.append(ms)
    bench.report.es_scan_seconds.append(es)
    bench.report.mysql_scan_rows, bench.report.es_scan_docs = rows, docs
    progress(f"bare scans ({label}): MySQL {rows} rows {ms:.2f}s, ES {docs} docs {es:.2f}s")


# the rotation


async def rotation(bench: Bench) -> None:
    r = bench.report

    def on_bucket(b: BucketReport, n: int, total: int) -> None:
        if n % 8 == 0 or n == total:
            progress(f"rotation: bucket {n}/{total} ({b.rows} rows, {b.seconds:.2f}s)")

    wheel, truth, index, state = build_wheel(
        bench.settings,
        bench.consumer_pool,
        bench.client,
        table=bench.table,
        sync_hash_column=bench.sync_hash_column,
        id_prefix=bench.id_prefix,
        scope=bench.scope,
        buckets=bench.options.buckets,
        progress_cb=on_bucket,
    )
    config = bench.settings.repair
    r.bucket_count = bench.options.buckets or config.bucket_count
    r.content_share = config.content_share
    r.sync_hash_column = bench.sync_hash_column
    r.table = bench.table
    profiler = cProfile.Profile() if bench.options.profile else None
    if profiler is not None:
        profiler.enable()
    report: RotationReport = await wheel.rotation()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(bench.options.profile))
        r.notes.append(f"cProfile of the rotation in {bench.options.profile} (slows it)")
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
