"""The polling relay against Debezium, side by side in one run (bench/README.md).

    python -m bench.relay_bench [--events N] [--rounds R] [--relays K] [--rate R]
                                [--lag-seconds S] [--json]

Against the real local stack; each path has its own database, topic, group and index
(`bench.relay_paths`). Phases:

1. **Publish** (R rounds, the paths in turns): 16 writers create N pages as fast as they can;
   the window runs from the first write to the N-th event readable in Kafka (a tap thread).
   events/s, and CPU ms per event of MariaDB, the publisher (Connect's JVM or the relays) and
   Kafka from /proc/PID/stat over the window.
2. **Relay drain** (each round): the relays stopped (SIGSTOP) while N pages are written (MariaDB's
   CPU for the writes alone), then resumed: the backlog's drain rate, and the CPU of MariaDB and
   the relays per event while only they work.
3. **Commit -> searchable**: per path one consumer (`searchsync run`), paced writers at `--rate`
   pages/s for `--lag-seconds`, ``_search`` polled until every page is found (`bench.paced`).

It prints numbers and asserts nothing. The pages of the Debezium path stay in the stack's
database (like `bench.pipeline_bench`'s); the relay path's database is dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import math
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from searchsync.config import load_settings
from searchsync.projection import default_registry
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from bench import procstat
from bench.common import (
    bench_main,
    delete_group,
    host_line,
    init_alias,
    median_spread,
    page_body,
    progress,
    run_bounded,
    started_at,
)
from bench.consumers import Members
from bench.live import KafkaTap
from bench.paced import paced_searchable
from bench.relay_paths import Path, debezium_path, drop_relay_path, relay_path
from bench.relay_report import render

WRITERS = 16
ARRIVAL_DEADLINE_S = 180.0


@dataclass(frozen=True)
class Options:
    events: int
    rounds: int
    relays: int
    rate: float
    lag_seconds: float
    json: bool
    paced_writer: str | None


def parse_args(argv: Sequence[str]) -> Options:
    p = argparse.ArgumentParser(prog="python -m bench.relay_bench")
    p.add_argument("--events", type=int, default=2_000, help="pages per publish window")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--relays", type=int, default=1, help="relay processes")
    p.add_argument("--rate", type=float, default=100.0, help="paced pages/s (commit->searchable)")
    p.add_argument("--lag-seconds", type=float, default=10.0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--paced-writer", help=argparse.SUPPRESS)  # the lag phase's child
    a = p.parse_args(list(argv))
    return Options(a.events, a.rounds, a.relays, a.rate, a.lag_seconds, a.json, a.paced_writer)


class Window:
    """One timed window on a path: a tap on its topic from the current end, CPU snapshots."""

    def __init__(self, path: Path, prefix: str, bootstrap: str) -> None:
        self.path, self.prefix = path, prefix
        self.pids: dict[str, int | list[int]] = {**procstat.service_pids()}
        self.pids["relay"] = [p.pid for p in path.relays]
        self.tap = KafkaTap(bootstrap, path.topic, prefix)

    def snapshot(self) -> procstat.CpuSnapshot:
        return procstat.snapshot(self.pids, time.monotonic())

    async def write(self, n: int) -> None:
        """`n` pages from 16 concurrent writers, as fast as they go."""
        assert self.path.pool is not None
        writer = PageWriter(self.path.pool)

        async def create(page_id: str) -> None:
            await writer.create(page_id, *page_body(page_id))

        ids = [f"{self.prefix}{i}" for i in range(n)]
        await run_bounded(WRITERS, [functools.partial(create, i) for i in ids])

    async def arrived(self, n: int) -> float:
        """When the `n`-th event became readable in Kafka (NaN if not within the deadline)."""
        deadline = time.monotonic() + ARRIVAL_DEADLINE_S
        while len(self.tap.arrivals) < n and time.monotonic() < deadline:
            self.path.check_relays()
            await asyncio.sleep(0.02)
        return max(self.tap.arrivals.values()) if len(self.tap.arrivals) == n else math.nan


def per_event(
    before: procstat.CpuSnapshot, after: procstat.CpuSnapshot, n: int, label: str = ""
) -> dict[str, float]:
    """CPU ms per event of each process group between two snapshots."""
    return {f"{label}{k}_ms": v * 1000 / n for k, v in procstat.cpu_delta(before, after).items()}


async def publish(path: Path, prefix: str, n: int, bootstrap: str) -> dict[str, float]:
    """Phase 1: write `n` pages as fast as 16 writers can, until all `n` events are in Kafka."""
    w = Window(path, prefix, bootstrap)
    w.tap.start()
    try:
        before, t0 = w.snapshot(), time.monotonic()
        await w.write(n)
        written = time.monotonic()
        last = await w.arrived(n)
        return {
            "events_s": n / (last - t0),
            "writes_s": n / (written - t0),
            **per_event(before, w.snapshot(), n),
        }
    finally:
        w.tap.close()


async def drain(path: Path, prefix: str, n: int, bootstrap: str) -> dict[str, float]:
    """Phase 2: the relays stopped while `n` pages are written, then resumed: the CPU of the
    writes alone, and the backlog's drain rate and CPU."""
    w = Window(path, prefix, bootstrap)
    w.tap.start()
    path.pause_relays(True)
    try:
        before = w.snapshot()
        await w.write(n)
        written = w.snapshot()
    finally:
        path.pause_relays(False)
    try:
        t0 = time.monotonic()
        last = await w.arrived(n)
        return {
            "drain_events_s": n / (last - t0),
            **per_event(before, written, n, "writes_only_"),
            **per_event(written, w.snapshot(), n, "drain_"),
        }
    finally:
        w.tap.close()


async def searchable(path: Path, es: Any, prefix: str, opts: Options) -> dict[str, float]:
    """Phase 3: one consumer on the path; paced writers; commit -> searchable."""
    members = Members(path.env, 1, label=f"relay-bench-{path.name}")
    await members.start()
    try:
        deadline = time.monotonic() + 120
        while not await members.all_assigned():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the {path.name} consumer holds no partition after 120 s")
            await asyncio.sleep(0.1)
        count = int(opts.rate * opts.lag_seconds)
        spec = {
            "prefix": prefix, "first": 0, "count": count, "rate": opts.rate,
            "writers": WRITERS, "seconds": opts.lag_seconds,
        }  # fmt: skip
        run = await paced_searchable(es, path.alias, spec, env=path.env, check=members.check_alive)
        return run.summary()
    finally:
        await members.stop()


async def run(opts: Options, command: str) -> dict[str, Any]:
    u = uuid.uuid4().hex[:8]
    bootstrap = load_settings(dict(os.environ)).kafka.bootstrap_servers
    progress(f"relay bench {u}: creating the relay path's database and topic")
    paths = [debezium_path(u), await asyncio.to_thread(relay_path, u, bootstrap)]
    dbz, rly = paths
    es = make_es_client(dbz.settings)
    projector = default_registry().get("wiki_page")
    rounds: dict[str, list[dict[str, float]]] = {"debezium": [], "relay": []}
    drains: list[dict[str, float]] = []
    lag: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    try:
        for p in paths:
            await init_alias(es, p.alias, projector)
            await p.open_pool(WRITERS)
        await rly.start_relays(opts.relays)
        for r in range(opts.rounds):
            for p in paths if r % 2 == 0 else paths[::-1]:
                progress(f"round {r + 1}: publish through {p.name}")
                rounds[p.name].append(
                    await publish(p, f"benchrelay-{u}-{p.name}-{r}-", opts.events, bootstrap)
                )
            progress(f"round {r + 1}: relay drain")
            drains.append(await drain(rly, f"benchrelay-{u}-drain-{r}-", opts.events, bootstrap))
        for p in paths:
            progress(f"commit -> searchable through {p.name}")
            lag[p.name] = await searchable(p, es, f"benchrelay-{u}-lag-{p.name}-", opts)
    finally:
        notes += await rly.stop_relays()
        for p in paths:
            if p.pool is not None:
                p.pool.close()
                await p.pool.wait_closed()
            await es.options(ignore_status=404).indices.delete(index=f"{p.alias}_v*")
            await asyncio.to_thread(delete_group, bootstrap, p.settings.kafka.group_id)
        await es.close()
        await asyncio.to_thread(drop_relay_path, rly, bootstrap)
    return {
        "command": command,
        "started_at": started_at(),
        "host": host_line(),
        "options": {"events": opts.events, "rounds": opts.rounds, "relays": opts.relays,
                    "rate": opts.rate, "lag_seconds": opts.lag_seconds},
        "publish": {name: _medians(rs) for name, rs in rounds.items()},
        "drain": _medians(drains),
        "searchable": lag,
        "notes": notes,
    }  # fmt: skip


def _medians(runs: list[dict[str, float]]) -> dict[str, list[float]]:
    """Per figure: [median, min, max] over the rounds."""
    return {k: list(median_spread([r[k] for r in runs])) for k in runs[0]} if runs else {}


def _child(opts: Options) -> Any:
    from bench import live

    return None if opts.paced_writer is None else live.paced_writer_child(opts.paced_writer)


def _emit(opts: Options, report: dict[str, Any]) -> str:
    return json.dumps(report, indent=2) if opts.json else render(report)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.relay_bench", argv, parse_args, _child, run, _emit)


if __name__ == "__main__":
    raise SystemExit(main())
