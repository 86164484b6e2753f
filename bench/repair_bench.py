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
5. live impact (``--lag-seconds`` > 0): a consumer (``python -m searchsync run``, its own group
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
import os
import statistics
import sys
import uuid
from collections.abc import Coroutine, Sequence
from typing import Any

from searchsync.config import load_settings

from bench.common import app_user, bench_env, bench_main, host_line, started_at
from bench.repair_live import live_impact
from bench.repair_phases import bare_scans, es_scan, mysql_scan, rotation
from bench.repair_report import BenchOptions, Report, render_text
from bench.repair_setup import Bench
from bench.repair_wheel import rotation_child


async def run(options: BenchOptions, command: str) -> Report:
    prefix = {"SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"benchr{uuid.uuid4().hex[:8]}"}
    settings = load_settings(bench_env(prefix))
    report = Report(command=command, started_at=started_at(), host=host_line(), rows=options.rows)
    bench = Bench(settings, options, report, app_user())
    try:
        await bench.open()
        await bench.setup()
        await mysql_scan(bench)  # warm-up, untimed
        await es_scan(bench)
        await bare_scans(bench, "before")
        await rotation(bench)
        await bare_scans(bench, "after")
        if options.lag_seconds > 0:
            await live_impact(bench)
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
        default=os.environ.get("BENCH_ADMIN_SOCKET"),
        help="MariaDB unix socket where root may create the scratch table"
        " (default: $BENCH_ADMIN_SOCKET; the local stack's is"
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


def _child(options: BenchOptions) -> Coroutine[Any, Any, None] | None:
    spec = options.rotation_child
    return None if spec is None else rotation_child(spec)


def _emit(options: BenchOptions, report: Report) -> str:
    return report.to_json() if options.as_json else render_text(report)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.repair_bench", argv, parse_args, _child, run, _emit)


if __name__ == "__main__":
    sys.exit(main())
