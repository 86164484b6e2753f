"""The live figures: commit -> searchable lag at half the peak rate, and the hot key, against one
``python -m searchsync run`` process following the shared topic (as production does).

The writers run in a child process (``python -m bench.pipeline_bench --paced-writer SPEC``) so
their CPU does not queue behind this event loop; CLOCK_MONOTONIC is shared by both processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import Consumer, TopicPartition
from elasticsearch import AsyncElasticsearch
from searchsync.config import load_settings
from searchsync.writer import PageWriter

from bench.common import (
    MGET_CHUNK,
    missing,
    open_app_pool,
    page_body,
    progress,
    quantile,
    topic_ends,
    wait_for,
)
from bench.consumers import Members

POLL_S: Final = 0.05
HOT_KEY_UPDATES: Final = 100


@dataclass
class LagFigures:
    target_rate: float = math.nan
    achieved_rate: float = math.nan
    pages: int = 0
    unseen: int = 0
    p50_s: float = math.nan
    p99_s: float = math.nan
    max_s: float = math.nan
    kafka_p50_s: float = math.nan  # commit -> event readable in Kafka (Debezium)
    kafka_p99_s: float = math.nan
    written_p50_s: float = math.nan  # commit -> write acknowledged by ES (realtime get)
    written_p99_s: float = math.nan


class KafkaTap:
    """Notes when each event of the bench's pages becomes readable in Kafka (a thread polling
    all partitions from their current end, no group, no commits)."""

    def __init__(self, bootstrap: str, topic: str, key_prefix: str) -> None:
        self.arrivals: dict[str, float] = {}
        self._prefix = key_prefix.encode()
        self._stop = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-tap-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        parts = self._consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ends = topic_ends(bootstrap, topic, list(parts))
        self._consumer.assign([TopicPartition(topic, p, o) for p, o in ends.items()])
        self._thread = threading.Thread(target=self._run, name="bench-kafka-tap", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for msg in self._consumer.consume(500, 0.05):
                key = msg.key()
                if msg.error() is None and key is not None and key.startswith(self._prefix):
                    self.arrivals.setdefault(key.decode(), time.monotonic())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._consumer.close()


async def wait_live(
    check: Callable[[], None], es: AsyncElasticsearch, alias: str, writer: PageWriter, prefix: str
) -> None:
    """Probe pages until one is searchable: the live consumer has joined (it starts at the
    topic end, so a probe written before its assignment is never seen); `check` raises when
    the consumer died."""
    deadline = time.monotonic() + 120
    for n in itertools.count():
        check()
        if time.monotonic() > deadline:
            raise RuntimeError("the consumer did not index a probe page within 120 s")
        probe = f"{prefix}probe-{n}"
        await writer.create(probe, "probe", "probe", {})
        until = time.monotonic() + 3
        while time.monotonic() < until:
            if await es.exists(index=alias, id=probe):
                return
            await asyncio.sleep(0.2)


async def lag(
    es: AsyncElasticsearch,
    alias: str,
    bootstrap: str,
    topic: str,
    prefix: str,
    rate: float,
    seconds: float,
    writers: int,
    check: Any,
) -> LagFigures:
    """Paced writers at `rate` for `seconds`; commit -> searchable per page."""
    f = LagFigures(target_rate=rate)
    total = max(1, round(rate * seconds))
    committed: dict[str, float] = {}
    written: dict[str, float] = {}
    seen: dict[str, float] = {}
    bounds: dict[str, float] = {}
    tap = KafkaTap(bootstrap, topic, prefix)
    tap.start()
    await es.search(index=alias, size=0)  # an idle shard's first search waits for a refresh
    spec = {
        "prefix": prefix,
        "first": 0,
        "count": total,
        "rate": rate,
        "writers": writers,
        "seconds": seconds,
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.pipeline_bench",
        "--paced-writer",
        json.dumps(spec),
        stdout=asyncio.subprocess.PIPE,
    )

    async def read_commits() -> None:
        assert child.stdout is not None
        async for raw in child.stdout:
            name, _, at = raw.decode().strip().partition(" ")
            if name in ("START", "END"):
                bounds[name] = float(at)
            elif at:
                committed[name] = float(at)

    writers_done = asyncio.Event()

    async def poller() -> None:
        while not (writers_done.is_set() and len(seen) == len(committed)):
            check()
            unwritten = [i for i in committed if i not in written]
            for start in range(0, len(unwritten), MGET_CHUNK):
                got: Any = await es.mget(
                    index=alias, ids=unwritten[start : start + MGET_CHUNK], source=False
                )
                now = time.monotonic()
                for doc in got["docs"]:
                    if doc.get("found"):
                        written.setdefault(doc["_id"], now)
            unseen = [i for i in committed if i not in seen]
            for start in range(0, len(unseen), MGET_CHUNK):
                chunk = unseen[start : start + MGET_CHUNK]
                resp: Any = await es.search(
                    index=alias, query={"ids": {"values": chunk}}, size=len(chunk), source=False
                )
                now = time.monotonic()
                for hit in resp["hits"]["hits"]:
                    seen.setdefault(hit["_id"], now)
            await asyncio.sleep(POLL_S)

    poll_task = asyncio.create_task(poller())
    try:
        await read_commits()
        await child.wait()
        writers_done.set()
        await asyncio.wait_for(asyncio.shield(poll_task), 30)
    except TimeoutError:
        pass
    finally:
        poll_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poll_task
        if child.returncode is None:
            child.kill()
            await child.wait()
        await asyncio.to_thread(tap.close)
    lags = [seen[i] - committed[i] for i in committed if i in seen]
    in_kafka = [tap.arrivals[i] - committed[i] for i in committed if i in tap.arrivals]
    acked = [written[i] - committed[i] for i in committed if i in written]
    f.kafka_p50_s, f.kafka_p99_s = quantile(in_kafka, 0.5), quantile(in_kafka, 0.99)
    f.written_p50_s, f.written_p99_s = quantile(acked, 0.5), quantile(acked, 0.99)
    f.pages, f.unseen = len(committed), len(committed) - len(lags)
    span = bounds.get("END", math.nan) - bounds.get("START", math.nan)
    f.achieved_rate = len(committed) / span if span > 0 else math.nan
    f.p50_s, f.p99_s = quantile(lags, 0.5), quantile(lags, 0.99)
    f.max_s = max(lags) if lags else math.nan
    progress(f"lag: {len(lags)} pages, p50 {f.p50_s:.3f}s p99 {f.p99_s:.3f}s")
    return f


async def hot_key(
    members: Members, es: AsyncElasticsearch, alias: str, writer: PageWriter, page_id: str
) -> tuple[float, float, float]:
    """(ES item writes, bulk requests, events consumed) for 100 back-to-back updates of one
    page, from the live consumer's metrics."""

    def counters(t: dict[str, float]) -> tuple[float, float, float, float]:
        items = t.get("es_bulk_item_success_total", 0) + t.get("es_version_conflict_total", 0)
        return (
            items,
            t.get("es_write_latency_seconds_count", 0),
            t.get("searchsync_events_consumed_total", 0),
            t.get("searchsync_event_outcomes_total", 0),
        )

    async def quiet() -> bool:
        c = counters(await members.totals())
        return c[3] >= c[2]

    await wait_for(quiet, 60, "the live consumer to finish what it took in", 0.1)
    before = counters(await members.totals())
    revision = 0
    for n in range(HOT_KEY_UPDATES):
        revision = await writer.update(page_id, content=f"hot update {n}")

    async def at_revision() -> bool:
        members.check_alive()
        return not await missing(es, alias, [page_id], version=revision)

    await wait_for(at_revision, 60, f"{page_id} at revision {revision}", 0.1)
    await wait_for(quiet, 60, "the live consumer to finish what it took in", 0.1)
    after = counters(await members.totals())
    return after[0] - before[0], after[1] - before[1], after[2] - before[2]


async def paced_writer_child(spec_json: str) -> None:
    """The lag phase's writers (run as a child process): create up to ``count`` pages at
    ``rate``/s from ``writers`` concurrent writers for at most ``seconds``, printing
    ``<id> <monotonic commit time>`` per page. With ``tolerant`` a write that fails (MariaDB
    restarting) skips its page instead of ending the writers."""
    spec = json.loads(spec_json)
    prefix, first, count = str(spec["prefix"]), int(spec["first"]), int(spec["count"])
    rate, writers = float(spec["rate"]), int(spec["writers"])
    seconds = float(spec["seconds"])
    tolerant = bool(spec.get("tolerant", False))  # a failed write skips its page (recovery bench)
    m = load_settings(dict(os.environ)).mysql
    pool = await open_app_pool(m, minsize=writers, maxsize=writers)
    writer = PageWriter(pool)
    slots = itertools.count()
    t0 = time.monotonic() + 0.1
    print(f"START {t0}", flush=True)

    async def one_writer() -> None:
        while (i := next(slots)) < count:
            await asyncio.sleep(max(0.0, t0 + i / rate - time.monotonic()))
            if time.monotonic() > t0 + seconds:
                return  # behind schedule: keep the phase at its length, report the real rate
            page_id = f"{prefix}{first + i}"
            title, content, relations = page_body(page_id)
            try:
                await writer.create(page_id, title, content, relations)
            except Exception:
                if not tolerant:
                    raise
                await asyncio.sleep(0.1)  # MariaDB down: this page is skipped, the pace kept
                continue
            print(f"{page_id} {time.monotonic()}", flush=True)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(writers):
                group.create_task(one_writer())
        print(f"END {time.monotonic()}", flush=True)
    finally:
        pool.close()
        await pool.wait_closed()
