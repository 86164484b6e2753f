"""The recovery benchmark's figures and its report: one line per measurement, then a table."""

from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass, field
from typing import Final

TARGET_S: Final = 30.0  # every recovery figure's target


@dataclass
class Figure:
    phase: str
    threshold_s: float
    recovery_s: float  # NaN: some page never became searchable
    from_fault_s: float  # the same point counted from the fault
    peak_lag_s: float
    pages: int
    unseen: int
    baseline_p99_s: float  # commit -> searchable p99 before the fault
    down_s: float  # from the fault to "up again" (the stop, the pause, the start's readiness)
    met: bool = False


@dataclass
class Memory:
    outage_s: float
    start_mib: float
    max_mib: float
    end_mib: float
    after_first_minute_growth_mib: float
    bounded: bool
    samples: list[tuple[float, float]] = field(default_factory=list)  # (s into outage, MiB)


@dataclass
class Report:
    started: str
    command: str
    rate: float
    figures: list[Figure] = field(default_factory=list)
    memory: Memory | None = None
    notes: list[str] = field(default_factory=list)


def line(f: Figure) -> str:
    what = "lag" if f.phase == "kill9" else "commit->searchable"
    rec = f"{f.recovery_s:.1f}s" if math.isfinite(f.recovery_s) else "NOT RECOVERED"
    verdict = "MET" if f.met else "MISSED"
    return (
        f"{f.phase:<13} {what} back under {f.threshold_s:.0f}s {rec} after up"
        f"  target <= {TARGET_S:.0f}s: {verdict}  ({f.from_fault_s:.1f}s after the fault,"
        f" up {f.down_s:.1f}s after it; peak lag {f.peak_lag_s:.1f}s, {f.pages} pages,"
        f" {f.unseen} never seen, p99 before {f.baseline_p99_s:.2f}s)"
    )


def render(report: Report) -> str:
    out = [
        f"searchsync recovery benchmark  {report.started}  {platform.node()}"
        f" ({os.cpu_count()} CPUs, Python {platform.python_version()})",
        f"command: {report.command}",
        f"load: paced writers at {report.rate:.0f} pages/s; one `python -m searchsync run` process",
        "",
        *(line(f) for f in report.figures),
    ]
    m = report.memory
    if m is not None:
        out.append(
            f"memory        VmRSS through a {m.outage_s:.0f}s ES outage: start {m.start_mib:.1f}"
            f" MiB, max {m.max_mib:.1f} MiB, end {m.end_mib:.1f} MiB; growth after the first"
            f" minute {m.after_first_minute_growth_mib:.1f} MiB:"
            f" {'BOUNDED' if m.bounded else 'NOT BOUNDED'}"
        )
    head = ("phase", "under", "after up", "target", "fault->up", "after fault", "peak lag")
    out += ["", "{:<14}{:>7}{:>10}{:>8}{:>11}{:>13}{:>10}".format(*head)]
    for f in report.figures:
        rec = f"{f.recovery_s:.1f}s" if math.isfinite(f.recovery_s) else "never"
        out.append(
            f"{f.phase:<14}{f.threshold_s:>6.0f}s{rec:>10}{'MET' if f.met else 'MISSED':>8}"
            f"{f.down_s:>10.1f}s{f.from_fault_s:>12.1f}s{f.peak_lag_s:>9.1f}s"
        )
    return "\n".join(out + [f"note: {n}" for n in report.notes])
