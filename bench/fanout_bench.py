"""searchsync's fan-out benchmark: the rename of one author with N articles under live writes.

    python -m bench.fanout_bench [--dependents N] [--lag-rate R] [--lag-seconds S] [--json]

Against the real local stack, with its own consumer group and index prefix. A live consumer
(`run_consumer`, in-process, as `searchsync run` runs it: pipeline and fan-out worker) follows
``wiki_page``, ``article`` and ``author``. Phases:

1. seed: one author and N articles of theirs (example type `article`, their events through the
   connector); the live consumer indexes them;
2. lag without a fan-out: paced writers (`bench.pipeline_bench`'s child process) create wiki pages
   at ``--lag-rate`` for ``--lag-seconds``; commit -> searchable p50/p99;
3. fan-out: the author is renamed (one transaction: row + outbox event) while the same paced
   writers run; the window ends when every article shows the new name in the index (realtime
   ``mget`` every 0.2 s): documents re-projected per second, the time until the last REBUILD was
   appended, and the live writes' p99 during it;
4. the rebuild's backfill (`Backfill`, as `searchsync rebuild` runs it) of the whole article table
   into a scratch index, after the fan-out, in this process: rows per second on the same box.

It asserts nothing. Progress goes to stderr, the report (or with ``--json`` one JSON object) to
stdout. It deletes the indices and the group it created; the MySQL rows are left.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from searchsync.config import load_settings

from bench.common import bench_env, bench_main, host_line, progress, started_at
from bench.fanout_setup import MODULES, TOPICS, FanoutBench
from bench.paced import paced_searchable
from bench.rebuild_backfill import TimedTruth, backfill_pass


@dataclass(frozen=True, slots=True)
class Options:
    dependents: int = 10_000
    lag_rate: float = 50.0
    lag_seconds: float = 10.0
    appends_per_s: float = 2_000.0
    as_json: bool = False


@dataclass(slots=True)
class Report:
    command: str
    started_at: str
    host: str
    dependents: int
    appends_per_s_setting: float
    fanout_seconds: float = math.nan  # rename commit -> every article shows the new name
    fanout_docs_per_s: float = math.nan
    appended_seconds: float = math.nan  # rename commit -> the job's pass done (MySQL clock)
    backfill_rows: int = 0
    backfill_seconds: float = math.nan
    backfill_rows_per_s: float = math.nan
    fanout_vs_backfill: float = math.nan
    lag: dict[str, dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


async def run(options: Options, command: str) -> Report:
    env = bench_env(
        {
            "SEARCHSYNC_KAFKA_TOPICS": TOPICS,
            "SEARCHSYNC_PROJECTION_MODULES": MODULES,
            "SEARCHSYNC_FANOUT_APPENDS_PER_S": str(options.appends_per_s),
            "SEARCHSYNC_FANOUT_POLL_INTERVAL_S": "0.2",
        }
    )
    settings = load_settings(env)
    report = Report(command, started_at(), host_line(), options.dependents, options.appends_per_s)
    bench = FanoutBench(settings, env)
    try:
        await bench.open()
        ids = await bench.seed(options.dependents)
        await lag_window(bench, options, report, "without fan-out", first=0)
        await fanout(bench, options, report, ids)
        await backfill(bench, report)
    finally:
        await bench.close()
        report.notes.extend(bench.notes)
    return report


async def lag_window(
    bench: FanoutBench, o: Options, report: Report, label: str, *, first: int
) -> None:
    count = max(1, round(o.lag_rate * o.lag_seconds))
    spec = {"prefix": f"fbench-{bench.u}-p", "first": first, "count": count, "rate": o.lag_rate}
    spec.update({"writers": 4, "seconds": o.lag_seconds})
    alias = bench.settings.alias("wiki_page")
    run = await paced_searchable(bench.client, alias, spec, env=bench.env, check=bench.check_alive)
    if run.timed_out:
        report.notes.append(f"{label}: some pages were not searchable within 30 s")
    report.lag[label] = run.summary()
    progress(f"{label}: p99 {report.lag[label]['p99_s']:.3f}s over {len(run.lags)} pages")


async def fanout(bench: FanoutBench, o: Options, report: Report, ids: list[str]) -> None:
    name = f"renamed {bench.u}"
    writes = asyncio.create_task(lag_window(bench, o, report, "during fan-out", first=1_000_000))
    await asyncio.sleep(0.5)  # the paced writers are under way
    wall = datetime.now(UTC).replace(tzinfo=None)
    t0 = await bench.rename(name)
    progress(f"renamed the author of {len(ids)} articles; waiting for every one to show it")
    while True:
        bench.check_alive()
        if await bench.showing(ids, name) == len(ids):
            break
        if time.monotonic() - t0 > 900:
            report.notes.append("the fan-out did not finish within 900 s")
            break
        await asyncio.sleep(0.2)
    report.fanout_seconds = time.monotonic() - t0
    report.fanout_docs_per_s = len(ids) / report.fanout_seconds
    finished = await bench.finished_at()  # by whichever worker leased the job
    if finished is not None:
        report.appended_seconds = (finished - wall).total_seconds()
    progress(f"fan-out: {len(ids)} documents in {report.fanout_seconds:.2f}s")
    await writes


async def backfill(bench: FanoutBench, report: Report) -> None:
    assert bench.pool is not None
    projector = bench.registry.get("article")
    target = f"{bench.settings.alias('article')}_bench_backfill"
    result = await backfill_pass(
        bench.settings, bench.client, TimedTruth(bench.pool), projector, target, keep=False
    )
    report.backfill_rows, report.backfill_seconds = result.rows, result.seconds
    report.backfill_rows_per_s = result.rows / result.seconds
    report.fanout_vs_backfill = report.fanout_docs_per_s / report.backfill_rows_per_s
    progress(f"backfill: {result.rows} rows in {result.seconds:.2f}s")


def render_text(report: Report) -> str:
    lines = [
        f"searchsync fan-out benchmark, {report.started_at}",
        f"command: {report.command}",
        f"host: {report.host}",
        f"rename of one author with {report.dependents} articles, under live writes"
        f" (fanout.appends_per_s = {report.appends_per_s_setting:g})",
        f"  every article shows the new name after {report.fanout_seconds:.2f}s:"
        f" {report.fanout_docs_per_s:.0f} documents re-projected/s",
        f"  last REBUILD appended after {report.appended_seconds:.2f}s",
        f"  rebuild backfill of the whole article table: {report.backfill_rows} rows in"
        f" {report.backfill_seconds:.2f}s = {report.backfill_rows_per_s:.0f} rows/s",
        f"  fan-out / backfill: {report.fanout_vs_backfill:.2f}",
    ]
    for label, lag in report.lag.items():
        lines.append(
            f"  live writes {label}: {lag['pages']:.0f} pages at {lag['rate']:.1f}/s,"
            f" commit -> searchable p50 {lag['p50_s']:.3f}s p99 {lag['p99_s']:.3f}s"
        )
    lines += [f"  note: {n}" for n in report.notes]
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout_bench", description=__doc__)
    parser.add_argument("--dependents", type=int, default=10_000, help="articles of the author")
    parser.add_argument("--lag-rate", type=float, default=50.0, help="paced pages/s")
    parser.add_argument("--lag-seconds", type=float, default=10.0, help="each lag window")
    parser.add_argument("--appends-per-s", type=float, default=2_000.0, help="fanout setting")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.dependents, args.lag_rate, args.lag_seconds, args.appends_per_s) <= 0:
        parser.error("every number must be positive")
    return Options(args.dependents, args.lag_rate, args.lag_seconds, args.appends_per_s, args.json)


def _emit(options: Options, report: Report) -> str:
    return json.dumps(asdict(report)) if options.as_json else render_text(report)


def _child(options: Options) -> Any:
    return None


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.fanout_bench", argv, parse_args, _child, run, _emit)


if __name__ == "__main__":
    raise SystemExit(main())
