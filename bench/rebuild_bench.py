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
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

from searchsync.config import load_settings

from bench.common import bench_env, bench_main, host_line, started_at
from bench.rebuild_child import backfill_child
from bench.rebuild_phases import backfill_vs_raw, measure_lag
from bench.rebuild_report import BenchOptions, Report, render_text
from bench.rebuild_setup import Bench


async def run(options: BenchOptions, command: str) -> Report:
    env = bench_env({})
    settings = load_settings(env)
    report = Report(
        command=command,
        started_at=started_at(),
        host=host_line(),
        rows_seeded=options.rows,
    )
    bench = Bench(settings, env, options, report.notes)
    try:
        await bench.open()
        await bench.seed(report)
        await backfill_vs_raw(bench, report)
        await measure_lag(bench, "without rebuild", report, with_rebuild=False)
        await measure_lag(bench, "during rebuild", report, with_rebuild=True)
        base, during = report.lag["without rebuild"], report.lag["during rebuild"]
        report.lag_p99_ratio = during["p99_s"] / base["p99_s"]
    finally:
        await bench.close()
    return report


def parse_args(argv: Sequence[str]) -> BenchOptions:
    parser = argparse.ArgumentParser(prog="python -m bench.rebuild_bench", description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="new pages to seed")
    parser.add_argument("--lag-seconds", type=float, default=15.0, help="each lag window")
    parser.add_argument("--lag-rate", type=float, default=100.0, help="paced pages/s")
    parser.add_argument(
        "--rounds", type=int, default=3, help="backfill and raw bulk in turn, this many times"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--backfill-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows < 1 or args.rounds < 1 or args.lag_seconds <= 0 or args.lag_rate <= 0:
        parser.error("--rows, --rounds, --lag-seconds and --lag-rate must be positive")
    return BenchOptions(
        rows=args.rows,
        lag_seconds=args.lag_seconds,
        lag_rate=args.lag_rate,
        rounds=args.rounds,
        as_json=args.json,
        backfill_child=args.backfill_child,
    )


def _child(options: BenchOptions) -> Coroutine[Any, Any, None] | None:
    spec = options.backfill_child
    return None if spec is None else backfill_child(spec)


def _emit(options: BenchOptions, report: Report) -> str:
    return report.to_json() if options.as_json else render_text(report)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.rebuild_bench", argv, parse_args, _child, run, _emit)


if __name__ == "__main__":
    sys.exit(main())
