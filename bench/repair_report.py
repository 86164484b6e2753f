"""The repair benchmark's options, its figures and their text report."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Final

RATIO_TARGET: Final = 1.5
SCAN_PAGE: Final = 5_000


@dataclass(frozen=True, slots=True)
class BenchOptions:
    rows: int = 100_000
    buckets: int | None = None  # None: the configured repair.bucket_count
    lag_seconds: float = 20.0  # 0: no live-impact phase
    lag_rate: float = 100.0
    as_json: bool = False
    rotation_child: str | None = None
    own_table: bool = False  # a scratch copy of wiki_page (needs --admin-socket)
    sync_hash_column: bool = False  # the scratch copy with the optional sync_hash migration
    admin_socket: str | None = None
    profile: str | None = None  # write a cProfile of the rotation there

    @property
    def scratch_table(self) -> bool:
        return self.own_table or self.sync_hash_column


@dataclass(slots=True)
class Report:
    command: str
    started_at: str
    host: str
    rows: int
    bucket_count: int = 0
    content_share: float = 0.0
    sync_hash_column: bool = False
    table: str = ""
    insert_seconds: float = 0.0
    index_seconds: float = 0.0
    mysql_scan_seconds: list[float] = field(default_factory=list)
    es_scan_seconds: list[float] = field(default_factory=list)
    mysql_scan_rows: int = 0
    es_scan_docs: int = 0
    rotation_seconds: float = 0.0
    rotation_buckets: int = 0
    rotation_content_buckets: int = 0
    rotation_rows: int = 0
    rotation_docs: int = 0
    rotation_findings: dict[str, int] = field(default_factory=dict)
    rotation_interrupted: int = 0
    bucket_p50_s: float = 0.0
    bucket_max_s: float = 0.0
    rotation_mysql_s: float = 0.0
    rotation_es_s: float = 0.0
    rotation_state_s: float = 0.0
    rotation_other_s: float = 0.0
    lag: dict[str, dict[str, float]] = field(default_factory=dict)
    lag_p99_ratio: float = 0.0
    bare_seconds: float = 0.0
    ratio: float = 0.0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _runs(xs: Sequence[float]) -> str:
    return "/".join(f"{x:.2f}" for x in xs)


def render_text(r: Report) -> str:
    ms = statistics.mean(r.mysql_scan_seconds) if r.mysql_scan_seconds else 0.0
    es = statistics.mean(r.es_scan_seconds) if r.es_scan_seconds else 0.0
    met = "MET" if r.ratio <= RATIO_TARGET else "MISSED"
    lines = [
        f"searchsync repair benchmark  {r.started_at}  {r.host}",
        f"command: {r.command}",
        "",
        f"setup           {r.rows} rows inserted in {r.insert_seconds:.1f}s,"
        f" indexed in {r.index_seconds:.1f}s",
        f"bare MySQL scan {ms:7.2f}s  (SELECT id, revision, {r.mysql_scan_rows} rows,"
        f" pages of {SCAN_PAGE}; before/after {_runs(r.mysql_scan_seconds)}s)",
        f"bare ES scan    {es:7.2f}s  (search_after over _id, source_revision,"
        f" {r.es_scan_docs} docs, pages of {SCAN_PAGE}; before/after {_runs(r.es_scan_seconds)}s)",
        f"rotation        {r.rotation_seconds:7.2f}s  ({r.rotation_buckets} buckets,"
        f" {r.rotation_content_buckets} with content; {r.rotation_rows} rows,"
        f" {r.rotation_docs} docs; bucket p50 {r.bucket_p50_s:.2f}s max {r.bucket_max_s:.2f}s)",
        f"   wheel: table {r.table}, bucket_count {r.bucket_count},"
        f" content_share {r.content_share},"
        f" sync_hash column {'on' if r.sync_hash_column else 'off'}, no load ceilings, dry-run;"
        f" findings {r.rotation_findings or 'none'}, interrupted {r.rotation_interrupted}",
        f"   time in: MySQL pages {r.rotation_mysql_s:.2f}s, ES pages {r.rotation_es_s:.2f}s,"
        f" wheel state {r.rotation_state_s:.2f}s, rest (compare, projection)"
        f" {r.rotation_other_s:.2f}s",
        f"ratio rotation / (MySQL scan + ES scan)  {r.ratio:.2f}   target <= {RATIO_TARGET}: {met}",
    ]
    for label in ("without", "with"):
        if label in r.lag:
            x = r.lag[label]
            extra = (
                f"; {x['rotations']:.0f} rotations done, mean {x['rotation_s']:.2f}s"
                if label == "with"
                else ""
            )
            lines.append(
                f"live lag {label:7s} repair  p50 {x['p50_s']:.3f}s  p99 {x['p99_s']:.3f}s"
                f"  max {x['max_s']:.3f}s  ({x['pages']:.0f} pages at {x['rate']:.0f}/s,"
                f" {x['unseen']:.0f} never seen{extra})"
            )
    if r.lag:
        lines.append(f"live lag p99 with / without repair  {r.lag_p99_ratio:.2f}")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)
