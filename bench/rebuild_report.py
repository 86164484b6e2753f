"""The rebuild benchmark's options, its figures and their text report."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Final

RATIO_TARGET: Final = 0.9


@dataclass(frozen=True, slots=True)
class BenchOptions:
    rows: int = 10_000
    lag_seconds: float = 15.0
    lag_rate: float = 100.0
    lag_writers: int = 8
    rounds: int = 3
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
    rounds: int = 0  # backfill and raw bulk in turn, this many times
    round_ratios: list[float] = field(default_factory=list)
    ratio: float = math.nan  # median of round_ratios: backfill docs/s / raw docs/s (same docs)
    ratio_vs_raw2: float = math.nan
    # the floor backfill (bench/rebuild_floor.py: the fixed libraries only), after the raw bulks
    floor_docs: int = 0
    floor_errors: int = 0
    floor_seconds: float = math.nan
    floor_docs_per_s: float = math.nan
    floor_ratio: float = math.nan  # floor docs/s / raw docs/s (1 in flight)
    # the child's own CPU (time.process_time) per row or document of each phase, microseconds
    backfill_cpu_us: float = math.nan
    raw_cpu_us: float = math.nan
    floor_cpu_us: float = math.nan
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


def render_text(r: Report) -> str:
    met = "MET" if r.ratio >= RATIO_TARGET else "MISSED"
    rounds = ", ".join(f"{x:.2f}" for x in r.round_ratios)
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
        f"   (median of {r.rounds} rounds in turn: {rounds}; vs 2 in flight"
        f" {r.ratio_vs_raw2:.2f})",
        f"   floor backfill          {r.floor_docs_per_s:8.0f} docs/s  ({r.floor_docs} docs in"
        f" {r.floor_seconds:.2f}s, {r.floor_errors} errors: the fixed libraries only,"
        f" bench/rebuild_floor.py); floor/raw {r.floor_ratio:.2f}, backfill/floor"
        f" {r.backfill_docs_per_s / r.floor_docs_per_s:.2f}",
        f"   the child's own CPU     backfill {r.backfill_cpu_us:.1f} us/row, raw bulk"
        f" {r.raw_cpu_us:.1f} us/doc, floor backfill {r.floor_cpu_us:.1f} us/row",
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
