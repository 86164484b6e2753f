"""The live consumer's memory over a long run at a steady rate.

    python -m bench.soak [--rate 1500] [--seconds 3600] [--events 5000] [--sample-s 10]
        [--swap-s 60] [--json]

One ``python -m searchsync run`` process (production config, INFO logging, the state upsert and
metrics on; its own group, topic, DLQ topic and index prefix) consumes a private topic into which
this process produces, paced at ``--rate`` events/s, the bench's captured events over and over:
N pages written once through `PageWriter` (MySQL -> Debezium), their N events copied off the
shared topic (`bench.runs.capture`). Every ``--swap-s`` the alias moves to a fresh, empty
physical index of the same mapping and schema version (the old one is deleted), so the next pass
applies real writes; the passes in between are verified 409s ("already applied"). Every
``--sample-s`` it records the consumer's ``VmRSS`` and its outcome count, and prints the start
(after the first minute), peak and end figures. It asserts nothing.

Like the pipeline benchmark it leaves the N MySQL rows in place (bench/README.md, "Isolation").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import math
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from elasticsearch import NotFoundError
from searchsync.config import load_settings
from searchsync.projection import default_registry
from searchsync.projection.topics import consumed_topics
from searchsync.search.admin import index_meta
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.writer import PageWriter

from bench import procstat
from bench.common import bench_env, bench_main, open_app_pool, page_body, progress, run_bounded
from bench.consumers import Members
from bench.runs import Message, capture, shared_topic_start

AGGREGATE_TYPE: Final = "wiki_page"
WRITERS: Final = 16
OUTCOMES: Final = "searchsync_event_outcomes_total"
TICK_S: Final = 0.1


@dataclass(frozen=True)
class SoakOptions:
    rate: float
    seconds: float
    events: int
    sample_s: float
    swap_s: float
    as_json: bool


@dataclass
class SoakReport:
    command: str
    rate: float
    samples: list[tuple[float, float, float]] = field(default_factory=list)  # t, RSS MiB, events
    totals: dict[str, float] = field(default_factory=dict)  # the consumer's last metrics

    def figures(self) -> dict[str, float]:
        """RSS start (the first sample after 60 s), peak, end; events/s achieved."""
        later = [s for s in self.samples if s[0] >= 60] or self.samples
        if not later:
            return {}
        rss = [s[1] for s in later]
        span = later[-1][0] - later[0][0]
        return {
            "rss_first_mib": self.samples[0][1],
            "rss_start_mib": rss[0],
            "rss_peak_mib": max(rss),
            "rss_end_mib": rss[-1],
            "events_per_s": (later[-1][2] - later[0][2]) / span if span > 0 else math.nan,
            "seconds": self.samples[-1][0],
        }


def _produce_paced(
    bootstrap: str, topic: str, messages: Sequence[Message], opt: SoakOptions, stop_at: float
) -> int:
    """Produce `messages` round and round at `opt.rate` per second until `stop_at`; how many."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent, t0 = 0, time.monotonic()
    try:
        while time.monotonic() < stop_at:
            due = int((time.monotonic() - t0) * opt.rate)
            while sent < due:
                partition, key, value, headers, _ = messages[sent % len(messages)]
                try:
                    producer.produce(topic, value, key, partition, headers=headers)
                except BufferError:
                    producer.poll(0.05)
                    continue
                sent += 1
            producer.poll(TICK_S)
    finally:
        producer.flush(30)
    return sent


async def run(opt: SoakOptions, command: str) -> SoakReport:
    u = uuid.uuid4().hex[:8]
    topic = f"bench-soak-{u}.events"
    shared = consumed_topics(load_settings(bench_env({})), ("wiki_page",))[0]
    env = bench_env(
        {"SEARCHSYNC_KAFKA_TOPICS": topic, "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "earliest"}
    )
    env.pop("SEARCHSYNC_PIPELINE_LAG_POLL_INTERVAL_S")  # production's lag interval
    settings = load_settings(env)
    projector = default_registry().get(AGGREGATE_TYPE)
    alias = settings.alias(AGGREGATE_TYPE)
    bootstrap = settings.kafka.bootstrap_servers
    report = SoakReport(command, opt.rate)
    es = make_es_client(settings)
    app_pool = await open_app_pool(settings.mysql, minsize=1, maxsize=WRITERS + 2)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    members = Members(env, 1, label="soak")
    physical: list[str] = []
    indices = EsIndexAdmin(es)

    async def swap(n: int) -> None:
        """Point `alias` (write and read) at a fresh ``<alias>_v<n>``; delete the old one."""
        index = f"{alias}_v{n}"
        meta = index_meta(projector.mapping, projector.schema_version)
        if not physical:
            await indices.create_index(index, projector.mapping, meta=meta, alias=alias)
        else:
            await indices.create_index(index, projector.mapping, meta=meta)
            await indices.swap_alias(alias, old=physical[0], new=index)
            await indices.delete_index(physical[0])
        physical[:] = [index]

    try:
        start = await asyncio.to_thread(shared_topic_start, bootstrap, shared)
        prefix = f"bench-soak-{u}-"
        ids = [f"{prefix}{i}" for i in range(opt.events)]
        writer = PageWriter(app_pool)

        async def create(page_id: str) -> None:
            await writer.create(page_id, *page_body(page_id))

        await run_bounded(WRITERS, [functools.partial(create, i) for i in ids])
        messages = await asyncio.to_thread(capture, bootstrap, shared, prefix, start, opt.events)
        progress(f"wrote and captured {len(messages)} events")
        for future in admin.create_topics([NewTopic(topic, len(start), 1)]).values():
            future.result(timeout=30)
        await swap(1)
        await members.start()
        t0 = time.monotonic()
        stop_at = t0 + opt.seconds
        producing = asyncio.create_task(
            asyncio.to_thread(_produce_paced, bootstrap, topic, messages, opt, stop_at)
        )
        next_swap, n = t0 + opt.swap_s, 1
        while not producing.done():
            await asyncio.sleep(opt.sample_s)
            now = time.monotonic()
            totals = report.totals = await members.totals()
            rss = procstat.status_mib(members.pids[0], "VmRSS")
            report.samples.append((now - t0, rss, totals.get(OUTCOMES, 0.0)))
            progress(f"t={now - t0:.0f}s rss={rss:.1f}MiB events={totals.get(OUTCOMES, 0):.0f}")
            if now >= next_swap and now < stop_at:
                n += 1
                await swap(n)
                next_swap = now + opt.swap_s
        await producing
    finally:
        await members.stop()
        for index in physical:
            with contextlib.suppress(NotFoundError):
                await es.indices.delete(index=index)
        for futures in (
            admin.delete_consumer_groups([settings.kafka.group_id], request_timeout=15),
            admin.delete_topics([topic, f"{settings.kafka.group_id}.dlq"], operation_timeout=15),
        ):
            for future in futures.values():
                with contextlib.suppress(Exception):
                    future.result(timeout=30)
        await es.close()
        app_pool.close()
        await app_pool.wait_closed()
    return report


def parse_args(argv: Sequence[str]) -> SoakOptions:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--rate", type=float, default=1500.0, help="events/s produced")
    parser.add_argument("--seconds", type=float, default=3600.0, help="how long")
    parser.add_argument("--events", type=int, default=5000, help="pages written and replayed")
    parser.add_argument("--sample-s", type=float, default=10.0, help="RSS sampling period")
    parser.add_argument("--swap-s", type=float, default=60.0, help="fresh index every S s")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    a = parser.parse_args(argv)
    return SoakOptions(a.rate, a.seconds, a.events, a.sample_s, a.swap_s, a.json)


def _emit(opt: SoakOptions, report: SoakReport) -> str:
    figures = report.figures()
    if opt.as_json:
        return json.dumps(
            {
                "command": report.command,
                "rate": report.rate,
                **figures,
                "written": report.totals.get("es_bulk_item_success_total", 0),
                "conflicts": report.totals.get("es_version_conflict_total", 0),
                "samples": report.samples,
            }
        )
    return (
        f"searchsync soak\ncommand: {report.command}\n"
        f"asked {report.rate:.0f} events/s, got {figures.get('events_per_s', math.nan):.0f}/s"
        f" over {figures.get('seconds', 0):.0f}s\n"
        f"consumer VmRSS: first {figures.get('rss_first_mib', math.nan):.1f} MiB,"
        f" after 60s {figures.get('rss_start_mib', math.nan):.1f},"
        f" peak {figures.get('rss_peak_mib', math.nan):.1f},"
        f" end {figures.get('rss_end_mib', math.nan):.1f} MiB\n"
        f"ES items written {report.totals.get('es_bulk_item_success_total', 0):.0f},"
        f" version conflicts {report.totals.get('es_version_conflict_total', 0):.0f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("bench.soak", argv, parse_args, lambda _: None, run, _emit)


if __name__ == "__main__":
    sys.exit(main())
