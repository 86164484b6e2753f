"""searchsync's recovery benchmark: how fast commit -> searchable comes back after a fault.

    python -m bench.recovery_bench [--phases kill9,mariadb,kafka,connect,elasticsearch,memory]
                                   [--rate 50] [--es-outage-s 600] [--json]

RESTARTS SERVICES: run it only against a stack of your own (the environment of
`deploy/local/env.sh` names it, the ``SEARCHSYNC_*`` variables point the consumer and this bench
at it). One ``python -m searchsync run`` process (production config, its own group and index
prefix, starting at the topic end) follows the outbox topic while paced writers create pages
(`bench.recovery_load`). Each phase writes for `--before-s`, applies its fault, and keeps writing
for `--after-s` after the recovery point:

- ``kill9``: kill -9 the consumer, start a new one `--kill-pause-s` later; from that start until
  the lag is back under 10 s for good (target 30 s);
- ``mariadb``, ``kafka``, ``connect``, ``elasticsearch``: ``deploy/local/<service>.sh stop``,
  `--down-s`, ``start`` (it returns once the service answers); from then until commit ->
  searchable is back under 2 s for good (target 30 s);
- ``memory``: Elasticsearch stopped for `--es-outage-s` under the same load; the consumer's
  VmRSS every second; start, max and end of the outage, and whether it is flat after the first
  minute (grows by at most `--rss-slack-mib`); then the recovery after ES is back.

Measured, not timed: it prints the figures and whether each target is met, and asserts nothing.
Progress goes to stderr, the report (with ``--json`` one JSON object) to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Final

from elasticsearch import AsyncElasticsearch
from searchsync.config import load_settings
from searchsync.projection import default_registry
from searchsync.writer import PageWriter

from bench.common import bench_env, init_alias, open_app_pool, progress, quantile, started_at
from bench.consumers import Members
from bench.live import wait_live
from bench.procstat import status_mib
from bench.recovery_load import Load, recovery
from bench.recovery_report import TARGET_S, Figure, Memory, Report, line, render
from tests.faults.services import Stack

PHASES: Final = ("kill9", "mariadb", "kafka", "connect", "elasticsearch", "memory")
KILL_LAG_S: Final = 10.0
SEARCHABLE_S: Final = 2.0
AGGREGATE_TYPE: Final = "wiki_page"


class Bench:
    def __init__(self, o: argparse.Namespace, env: dict[str, str], es: AsyncElasticsearch) -> None:
        self.o, self.env, self.es = o, env, es
        self.alias = load_settings(env).alias(AGGREGATE_TYPE)
        self.members = Members(env, 1, label="recovery")
        self.stack = Stack.from_env()
        self.log = Path(tempfile.mkdtemp(prefix="recovery-bench-")) / "services.log"
        self.tag = uuid.uuid4().hex[:8]

    async def phase(self, name: str, report: Report) -> None:
        o = self.o
        load = Load(
            self.es,
            self.alias,
            f"rec-{self.tag}-{name}-",
            o.rate,
            o.writers,
            check=self.members.check_alive,
        )
        await load.start()
        await asyncio.sleep(o.before_s)
        fault_at = time.monotonic()
        baseline = [load.seen[i] - c for i, c in load.committed.items() if i in load.seen]
        sampler, samples = None, []
        if name == "kill9":
            await self._kill9()
        else:
            service = "elasticsearch" if name == "memory" else name
            await asyncio.to_thread(self.stack.script, service, "stop", self.log)
            if name == "memory":
                sampler = asyncio.create_task(self._sample_rss(fault_at))
            await asyncio.sleep(o.es_outage_s if name == "memory" else o.down_s)
            if sampler is not None:
                sampler.cancel()
                samples = await sampler
            await asyncio.to_thread(self.stack.script, service, "start", self.log)
        up_at = time.monotonic()
        progress(f"{name}: up again {up_at - fault_at:.1f}s after the fault")
        await asyncio.sleep(TARGET_S + o.after_s)
        until = time.monotonic()
        await load.stop(settle_s=60.0)
        threshold = KILL_LAG_S if name == "kill9" else SEARCHABLE_S
        r = recovery(
            load.committed,
            load.seen,
            fault_at=fault_at,
            up_at=up_at,
            until=until,
            threshold_s=threshold,
        )
        fig = Figure(
            name,
            threshold,
            r.seconds,
            r.from_fault_s,
            r.peak_lag_s,
            r.pages,
            r.unseen,
            quantile(baseline, 0.99),
            up_at - fault_at,
            met=math.isfinite(r.seconds) and r.seconds <= TARGET_S,
        )
        report.figures.append(fig)
        if o.dump:
            times = {"fault_at": fault_at, "up_at": up_at, "until": until}
            data = {**times, "committed": load.committed, "seen": load.seen, "polls": load.polls}
            dump(Path(o.dump) / f"{name}.json", data)
        progress(line(fig))
        if sampler is not None:
            report.memory = self._memory(samples)

    async def _kill9(self) -> None:
        dead = self.members.members.pop()
        dead.process.kill()
        await dead.process.wait()
        dead.log.close()
        os.unlink(dead.log.name)
        await asyncio.sleep(self.o.kill_pause_s)
        await self.members.start()

    async def _sample_rss(self, t0: float) -> list[tuple[float, float]]:
        out: list[tuple[float, float]] = []
        pid = self.members.pids[0]
        try:
            while True:
                out.append((time.monotonic() - t0, status_mib(pid, "VmRSS")))
                await asyncio.sleep(1.0)
        except asyncio.CancelledError:
            return out

    def _memory(self, samples: list[tuple[float, float]]) -> Memory:
        values = [v for _, v in samples if math.isfinite(v)]
        later = [v for t, v in samples if t >= 60.0 and math.isfinite(v)]
        growth = (max(later) - later[0]) if later else math.nan
        return Memory(
            outage_s=self.o.es_outage_s,
            start_mib=values[0] if values else math.nan,
            max_mib=max(values, default=math.nan),
            end_mib=values[-1] if values else math.nan,
            after_first_minute_growth_mib=growth,
            bounded=math.isfinite(growth) and growth <= self.o.rss_slack_mib,
            samples=samples,
        )


def dump(path: Path, data: dict[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


async def run(o: argparse.Namespace, command: str) -> Report:
    report = Report(started_at(), command, o.rate)
    env = bench_env({})
    if o.session_timeout_ms is None:
        env.pop("SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS")  # the production default
    else:
        env["SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS"] = str(o.session_timeout_ms)
    settings = load_settings(env)
    es = AsyncElasticsearch(settings.elasticsearch.hosts[0], request_timeout=10)
    projector = default_registry().get(AGGREGATE_TYPE)
    alias = settings.alias(AGGREGATE_TYPE)
    await init_alias(es, alias, projector)
    pool = await open_app_pool(settings.mysql, minsize=1, maxsize=2)
    bench = Bench(o, env, es)
    try:
        await bench.members.start()
        await wait_live(bench.members.check_alive, es, alias, PageWriter(pool), f"rec-{bench.tag}-")
        pool.close()
        await pool.wait_closed()
        for name in o.phases:
            progress(f"phase {name}")
            await bench.phase(name, report)
    finally:
        await bench.members.stop(keep_logs=True)
        report.notes += [*bench.members.notes, f"service script output: {bench.log}"]
        indices = await es.indices.get_alias(name=alias)
        await es.indices.delete(index=",".join(indices))
        await es.close()
    return report


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.recovery_bench", description=__doc__)
    p.add_argument("--phases", default=",".join(PHASES))
    p.add_argument("--rate", type=float, default=50.0, help="pages/s written during each phase")
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--before-s", type=float, default=10.0, help="load before each fault")
    p.add_argument("--after-s", type=float, default=15.0, help="load after the 30 s target")
    p.add_argument("--down-s", type=float, default=5.0, help="pause between stop and start")
    p.add_argument("--kill-pause-s", type=float, default=1.0, help="kill -9 -> new consumer")
    p.add_argument("--es-outage-s", type=float, default=600.0, help="the memory phase's outage")
    p.add_argument("--rss-slack-mib", type=float, default=10.0, help="'flat' after minute one")
    p.add_argument("--session-timeout-ms", type=int, help="default: the consumer's own")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--dump", help="write each phase's commit/searchable times to DIR/<phase>.json")
    o = p.parse_args(argv)
    o.phases = [x for x in o.phases.split(",") if x]
    if bad := [x for x in o.phases if x not in PHASES]:
        p.error(f"unknown phases {bad}; choose from {','.join(PHASES)}")
    return o


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    o = parse_args(argv)
    command = " ".join([".venv/bin/python -m bench.recovery_bench", *argv])
    report = asyncio.run(run(o, command))
    print(json.dumps(asdict(report)) if o.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
