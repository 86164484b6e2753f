"""searchsync's pipeline benchmark: every number measured side by side in one run.

    python -m bench.pipeline_bench [--events N] [--repeats R] [--members 1,2,3] [--json]

Against the real local stack, with its own groups, topics, indices and page-id prefix. The
consumer runs as production runs it: ``python -m searchsync run`` processes with the production
config (the bench only isolates group, topic, index prefix and metrics port) at the default log
level INFO. Phases (bench/README.md):

1. N pages are written once through MySQL -> Debezium; their events are copied off the shared
   topic (`bench.runs.capture`) and their documents projected for the raw bulk;
2. R rounds, each: the raw bulk of the N documents, then a pipeline run per group size in
   ``--members`` (own topic; members start and hold partitions before the events are produced);
   round 1 of the one-member run adds an ``offsets reset --to earliest`` replay. CPU per process
   (consumer, ES, MariaDB, Kafka, Connect, this process) comes from /proc/PID/stat;
3. a live consumer on the shared topic: commit -> searchable lag at half the median one-member
   rate, the hot key, the consumer's memory.

It reports numbers and whether each target is met; it asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Coroutine, Sequence
from typing import Any, Final

from elasticsearch import NotFoundError
from searchsync.config import load_settings
from searchsync.mysql.pool import create_pool
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import default_registry
from searchsync.projection.topics import consumed_topics
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from bench import live, procstat
from bench.common import (
    MGET_CHUNK,
    bench_env,
    bench_main,
    delete_group,
    host_line,
    init_alias,
    median_spread,
    metric_total,
    open_app_pool,
    page_body,
    progress,
    quantile,
    run_bounded,
    started_at,
    wait_for,
)
from bench.consumers import Members
from bench.floor import library_floor
from bench.report import BenchOptions, Report, render_text
from bench.runs import Runs, capture, shared_topic_start

__all__ = [  # shared with the other benchmarks
    "MGET_CHUNK",
    "bench_env",
    "metric_total",
    "page_body",
    "progress",
    "quantile",
    "run_bounded",
    "wait_for",
]

log = logging.getLogger("bench")

AGGREGATE_TYPE: Final = "wiki_page"
WRITERS: Final = 16


async def run(options: BenchOptions, command: str) -> Report:
    env = bench_env({})
    env.pop("SEARCHSYNC_PIPELINE_LAG_POLL_INTERVAL_S")  # production's lag interval
    settings = load_settings(env)
    report = Report(
        command=command,
        started_at=started_at(),
        host=host_line(),
        cores=os.cpu_count() or 1,
        events=options.events,
    )
    projector = default_registry().get(AGGREGATE_TYPE)
    m = settings.mysql
    app_pool = await open_app_pool(m, minsize=1, maxsize=WRITERS + 4)
    pool = await create_pool(
        host=m.host,
        port=m.port,
        user=m.user,
        password=m.password.reveal(),
        database=m.database,
        minsize=1,
        maxsize=2,
    )
    es = make_es_client(settings)
    writer = PageWriter(app_pool)
    prefix = f"bench-{uuid.uuid4().hex[:8]}-"
    topic, bootstrap = (
        consumed_topics(settings, ("wiki_page",))[0],
        settings.kafka.bootstrap_servers,
    )
    try:
        # 1. the events, once
        start = await asyncio.to_thread(shared_topic_start, bootstrap, topic)
        ids = [f"{prefix}{i}" for i in range(options.events)]
        t0 = time.monotonic()

        async def create(page_id: str) -> None:
            await writer.create(page_id, *page_body(page_id))

        await run_bounded(WRITERS, [functools.partial(create, i) for i in ids])
        report.write_rate = options.events / (time.monotonic() - t0)
        messages = await asyncio.to_thread(capture, bootstrap, topic, prefix, start, options.events)
        report.kafka_ready_seconds = time.monotonic() - t0
        progress(f"wrote {options.events} pages ({report.write_rate:.0f}/s), events captured")
        rows = await MysqlTruth(pool).rows_by_id(projector, ids)
        docs = [projector.project(rows[i]) for i in ids if i in rows]
        # 2. rounds, side by side
        runs = Runs(env, es, projector, messages, ids, len(start))
        report.services = sorted(runs.services)
        if not runs.services:
            report.notes.append(
                "no stack service pids found (.stack/run of this checkout; set"
                " STACK_RUN_DIR): no services' CPU, no ceiling"
            )
        # development aid: a one-member run of another checkout's consumer in every round
        compare = os.environ.get("SEARCHSYNC_BENCH_COMPARE_PYTHON") or os.environ.get(
            "BENCH_COMPARE_PYTHON"
        )
        for round_no in range(options.repeats):
            report.windows.append(await runs.raw(docs))
            for n in options.members:
                report.windows.extend(await runs.pipeline(n, replay=round_no == 0 and n == 1))
                if n == 1 and compare:  # another checkout's consumer, right after this one's
                    report.windows.extend(await runs.pipeline(1, python=compare))
            # the floor in every round, right after its pipeline runs: the same load as they had
            report.floor_rounds.append(
                await library_floor(
                    bootstrap=bootstrap,
                    topic=topic,
                    start=start,
                    n=options.events,
                    pool=pool,
                    es=es,
                    ids=ids,
                    index_prefix=settings.elasticsearch.index_prefix,
                    schema_version=projector.schema_version,
                    repeats=1,
                )
            )
            progress(f"floor of the fixed libraries: {sum(report.floor_rounds[-1].values()):.4f}")
        report.notes.extend(runs.notes)
        # 3. live
        if options.lag_seconds > 0:
            await live_phases(report, options, env, es, writer, prefix)
    finally:
        await es.close()
        for p in (pool, app_pool):
            p.close()
            await p.wait_closed()
    return report


async def live_phases(
    report: Report,
    options: BenchOptions,
    env: dict[str, str],
    es: Any,
    writer: PageWriter,
    prefix: str,
) -> None:
    settings = load_settings(env)
    projector = default_registry().get(AGGREGATE_TYPE)
    alias = settings.alias(AGGREGATE_TYPE)
    await init_alias(es, alias, projector)
    members = Members(env, 1, label="live")
    try:
        await members.start()
        await live.wait_live(members.check_alive, es, alias, writer, f"{prefix}live-")
        rate = 0.5 * median_spread(report.rates("pipeline", 1))[0]
        report.lag = await live.lag(
            es,
            alias,
            settings.kafka.bootstrap_servers,
            consumed_topics(settings, ("wiki_page",))[0],
            f"{prefix}lag-",
            rate,
            options.lag_seconds,
            WRITERS,
            members.check_alive,
        )
        hot = f"{prefix}lag-0"
        report.hot_key = await live.hot_key(members, es, alias, writer, hot)
        report.rss_mib = procstat.status_mib(members.pids[0], "VmRSS")
        report.hwm_mib = procstat.status_mib(members.pids[0], "VmHWM")
    finally:
        await members.stop()
        report.notes.extend(members.notes)
        with contextlib.suppress(NotFoundError):
            await es.indices.delete(index=f"{alias}_v1")
        with contextlib.suppress(Exception):
            delete_group(settings.kafka.bootstrap_servers, settings.kafka.group_id)


def parse_args(argv: Sequence[str]) -> BenchOptions:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_bench", description=__doc__)
    parser.add_argument("--events", type=int, default=5_000, help="pages for the throughput runs")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of every figure")
    parser.add_argument("--members", default="1,2,3", help="consumer processes per run")
    parser.add_argument("--lag-seconds", type=float, default=10.0, help="paced-write duration")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--paced-writer", help=argparse.SUPPRESS)  # the lag phase's child
    args = parser.parse_args(argv)
    if args.events < 1 or args.repeats < 1:
        parser.error("--events and --repeats must be >= 1")
    members = tuple(int(x) for x in args.members.split(","))
    if 1 not in members:
        parser.error("--members must include 1")
    return BenchOptions(
        events=args.events,
        repeats=args.repeats,
        members=members,
        lag_seconds=args.lag_seconds,
        as_json=args.json,
        paced_writer=args.paced_writer,
    )


def _child(options: BenchOptions) -> Coroutine[Any, Any, None] | None:
    spec = options.paced_writer
    return None if spec is None else live.paced_writer_child(spec)


def _emit(options: BenchOptions, report: Report) -> str:
    return json.dumps(report.to_json()) if options.as_json else render_text(report)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.pipeline_bench", argv, parse_args, _child, run, _emit)


if __name__ == "__main__":
    sys.exit(main())
