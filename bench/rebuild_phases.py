"""The rebuild benchmark's timed phases: the backfill against the raw bulk (in the child), and a
commit -> searchable lag window, with or without a rebuild running beside it."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from bench.common import progress
from bench.paced import paced_searchable
from bench.rebuild_report import Report
from bench.rebuild_setup import Bench


async def backfill_vs_raw(bench: Bench, report: Report) -> None:
    """Phases 1 and 2 in a child process (`compare`), as ``searchsync rebuild`` runs apart
    from the live consumers: the in-process live consumer, indexing whatever the shared
    topic carries, would otherwise take CPU from the backfill's event loop and not from the
    raw bulk's, which barely needs any."""
    rounds = bench.options.rounds
    progress(
        f"backfill of the whole table into {bench.alias}_v2, then the raw bulk, {rounds} times"
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.rebuild_bench",
        "--backfill-child",
        json.dumps({"compare": rounds}),
        stdout=asyncio.subprocess.PIPE,
        env=bench.env,
    )
    out, _ = await asyncio.wait_for(child.communicate(), 600 * (1 + rounds))
    if child.returncode != 0:
        raise RuntimeError(f"the backfill/raw child exited with {child.returncode}")
    [line] = [x for x in out.decode().splitlines() if x.startswith("{")]
    for name, value in json.loads(line).items():
        setattr(report, name, value)
    progress(
        f"backfill: {report.backfill_rows} rows in {report.backfill_seconds:.2f}s; raw bulk:"
        f" {report.raw_docs} docs in {report.raw_seconds:.2f}s; ratio {report.ratio:.2f} (median"
        f" of {', '.join(f'{x:.2f}' for x in report.round_ratios)})"
    )


async def measure_lag(bench: Bench, label: str, report: Report, *, with_rebuild: bool) -> None:
    o = bench.options
    count = max(1, round(o.lag_rate * o.lag_seconds))
    ids = bench.new_ids(count)
    first = int(ids[0].rsplit("-", 1)[1])
    await bench.client.search(index=bench.alias, size=0)  # wake an idle shard's refresh
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
            env=bench.env,
        )
        assert rebuild.stdout is not None
        line = await asyncio.wait_for(rebuild.stdout.readline(), 60)
        if line.strip() != b"START":
            raise RuntimeError(f"the rebuild child did not start: {line!r}")
    spec = {"prefix": bench.id_prefix, "first": first, "count": count, "rate": o.lag_rate}
    spec.update({"writers": o.lag_writers, "seconds": o.lag_seconds})
    try:
        run = await paced_searchable(
            bench.client, bench.alias, spec, env=bench.env, check=bench.check_alive
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
