"""searchsync's initial-load benchmark: `searchsync index load` against a raw bulk of the same
documents, its peak memory, and one full repair rotation over the loaded index, in one run.

    python -m bench.load_bench [--rows N] [--parts K] [--json]

Against the real local MariaDB and Elasticsearch, with its own id prefix, index prefix and
wheel-state scope. Phases, in order:

1. setup: N ``article`` rows (the example type with a child table and a lookup: 3 ``article_tag``
   rows each, an ``author`` per 100 articles) inserted with plain SQL, no outbox events, as rows
   that exist before searchsync; the article alias created as ``searchsync index init`` does;
2. load: ``python -m searchsync index load --type article --where "id LIKE '<prefix>%'"
   --no-wait --json`` as a child process, as an operator runs it; its rows/s (its own clock, from
   the plan to the last chunk), its peak RSS (``wait4``'s ``ru_maxrss``) and its RSS sampled
   every 0.5 s (flat, or growing with the rows?);
3. raw bulk: the same documents (the rows read and projected again in the bench process, before
   the clock starts) bulk-indexed with the bare async client into a fresh index with the same
   body, 500 per bulk (the configured bulk size), one request in flight as the load sends them;
   load/raw is documents per second against documents per second;
4. parts: the same load in K processes at once (``--part i/K``) into a second alias (skipped with
   ``--parts 1``): rows/s of all K together;
5. repair: one full rotation of the repair wheel (content checked in every bucket, as ``repair
   --once`` does; dry run) over the loaded alias: its time and its findings (0: the load left no
   drift).

It reports numbers and ratios and asserts nothing (targets: load/raw >= 0.9, peak RSS <= 300 MB).
Progress on stderr, the report (or with ``--json`` one JSON object) on stdout. At the end the
indices are deleted and the rows deleted again (they never had events)."""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from searchsync.config import load_settings

from bench.common import bench_env, bench_main, host_line, started_at
from bench.load_phases import LoadBench

MODULES = "searchsync.projection.wiki_page,searchsync.examples.article"


@dataclass(frozen=True, slots=True)
class Options:
    rows: int
    parts: int
    as_json: bool


@dataclass(slots=True)
class Report:
    command: str
    started_at: str
    host: str
    rows: int
    setup_s: float = 0.0
    load_rows: int = 0
    load_s: float = 0.0  # the load's own clock (summary "seconds")
    load_wall_s: float = 0.0  # the child process, start to exit
    load_cpu_s: float = 0.0  # the child's user + system CPU, start to exit (imports included)
    load_peak_rss_mb: float = 0.0
    load_rss_mb: list[float] = field(default_factory=list)  # sampled every 0.5 s
    raw_docs: int = 0
    raw_s: float = 0.0
    raw_errors: int = 0
    parts: int = 1
    parts_rows: int = 0
    parts_wall_s: float = 0.0
    parts_peak_rss_mb: list[float] = field(default_factory=list)
    rotation_s: float = 0.0
    rotation_rows: int = 0
    rotation_docs: int = 0
    rotation_findings: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def load_rate(self) -> float:
        return self.load_rows / self.load_s if self.load_s else 0.0

    @property
    def raw_rate(self) -> float:
        return self.raw_docs / self.raw_s if self.raw_s else 0.0

    @property
    def parts_rate(self) -> float:
        return self.parts_rows / self.parts_wall_s if self.parts_wall_s else 0.0


async def run(options: Options, command: str) -> Report:
    u = uuid.uuid4().hex[:8]
    env = bench_env(
        {
            "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"lbench{u}",
            "SEARCHSYNC_PROJECTION_MODULES": MODULES,
            "SEARCHSYNC_KAFKA_TOPICS": "outbox.event.wiki_page,outbox.event.article",
        }
    )
    report = Report(command, started_at(), host_line(), options.rows, parts=options.parts)
    bench = LoadBench(load_settings(env), env, f"lb{u}-", report)
    try:
        await bench.open()
        t0 = time.monotonic()
        await bench.setup(options.rows)
        report.setup_s = time.monotonic() - t0
        await bench.load_once()
        await bench.raw_bulk()
        if options.parts > 1:
            await bench.load_in_parts(options.parts, f"lbenchp{u}")
        await bench.rotation()
    finally:
        await bench.close()
    return report


def render_text(r: Report) -> str:
    rss = r.load_rss_mb
    quarter = [rss[min(len(rss) - 1, (len(rss) * q) // 4)] for q in (1, 2, 3, 4)] if rss else []
    lines = [
        f"# {r.command}",
        f"# {r.started_at} on {r.host}",
        f"rows: {r.rows} articles (3 tags each, an author per 100), set up in {r.setup_s:.1f}s",
        "",
        "| figure | value |",
        "|---|---|",
        f"| load (1 process) | {r.load_rows} rows in {r.load_s:.1f}s: **{r.load_rate:.0f} docs/s**"
        f" (process {r.load_wall_s:.1f}s, {1000 * r.load_cpu_s / max(r.load_rows, 1):.3f}"
        " CPU ms per row) |",
        f"| raw bulk of the same documents | {r.raw_docs} docs in {r.raw_s:.1f}s:"
        f" {r.raw_rate:.0f} docs/s ({r.raw_errors} item errors) |",
        f"| load / raw | **{r.load_rate / r.raw_rate if r.raw_rate else 0:.2f}** (target >= 0.9) |",
        f"| load peak RSS | **{r.load_peak_rss_mb:.0f} MB** (target <= 300); RSS at 1/4, 1/2,"
        f" 3/4, end of the run: {', '.join(f'{v:.0f}' for v in quarter)} MB |",
    ]
    if r.parts > 1:
        lines.append(
            f"| load in {r.parts} processes (`--part i/{r.parts}`) | {r.parts_rows} rows in"
            f" {r.parts_wall_s:.1f}s: {r.parts_rate:.0f} docs/s; peak RSS"
            f" {', '.join(f'{v:.0f}' for v in r.parts_peak_rss_mb)} MB |"
        )
    lines.append(
        f"| full repair rotation (content of every bucket) | {r.rotation_s:.1f}s over"
        f" {r.rotation_rows} rows / {r.rotation_docs} docs, {r.rotation_findings} findings |"
    )
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)


def parse_args(argv: Sequence[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.load_bench", description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000, help="articles to load")
    parser.add_argument(
        "--parts", type=int, default=2, help="processes of the split load (1: skip)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.parts < 1:
        parser.error("--rows and --parts must be >= 1")
    return Options(args.rows, args.parts, args.json)


def _emit(options: Options, report: Report) -> str:
    if options.as_json:
        return json.dumps({**asdict(report), "load_per_raw": report.load_rate / report.raw_rate})
    return render_text(report)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.load_bench", argv, parse_args, lambda _o: None, run, _emit)


if __name__ == "__main__":
    sys.exit(main())
