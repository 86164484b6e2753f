"""Per-process CPU from /proc/PID/stat (utime + stime) and memory from /proc/PID/status.

The stack's services are found from the run directory of the local stack (``<repo>/.stack/run/
<name>.pid``, written by deploy/local/lib.sh); `STACK_RUN_DIR` overrides it. A
process's utime and stime include all its threads (a JVM's GC and compiler threads too).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SERVICES: Final = ("elasticsearch", "mariadb", "kafka", "connect")
TICKS_PER_S: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` in seconds; NaN if the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return math.nan
    # the command name (field 2) may hold spaces: the fields after it start past the last ')'
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S  # fields 14 and 15 of stat(5)


def status_mib(pid: int | str, key: str) -> float:
    """A ``kB`` line of /proc/PID/status (VmRSS, VmHWM) in MiB; NaN where unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def default_run_dir() -> Path:
    override = os.environ.get("STACK_RUN_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / ".stack" / "run"


def service_pids(run_dir: Path | None = None) -> dict[str, int]:
    """The live pid of each stack service found in the run directory."""
    found: dict[str, int] = {}
    base = run_dir or default_run_dir()
    for name in SERVICES:
        try:
            pid = int((base / f"{name}.pid").read_text().strip())
        except (OSError, ValueError):
            continue
        if math.isfinite(cpu_seconds(pid)):
            found[name] = pid
    return found


@dataclass(frozen=True, slots=True)
class CpuSnapshot:
    at: float  # monotonic seconds
    seconds: Mapping[str, float]  # name -> cumulative CPU seconds


def snapshot(pids: Mapping[str, int | list[int]], at: float) -> CpuSnapshot:
    """CPU seconds per name; a list of pids is summed (e.g. all consumer processes)."""
    out: dict[str, float] = {}
    for name, pid in pids.items():
        group = pid if isinstance(pid, list) else [pid]
        out[name] = sum(cpu_seconds(p) for p in group)
    out["machine"] = machine_busy_seconds()
    return CpuSnapshot(at, out)


def cpu_delta(start: CpuSnapshot, end: CpuSnapshot) -> dict[str, float]:
    """CPU seconds each name used between two snapshots."""
    return {k: end.seconds[k] - start.seconds.get(k, 0.0) for k in end.seconds}


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent not idle (from /proc/stat), for every process on the box."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
    except OSError:
        return math.nan
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / TICKS_PER_S
