"""The throughput figures: pipeline runs with 1..k consumer processes, the raw bulk of the same
documents, and an ``offsets reset --to earliest`` replay, each with the CPU every process spent.

The bench's N events are written once through MySQL and Debezium; `capture` copies them off the
shared topic. Each pipeline run then gets its own topic (the shared topic's partition count), group
and index: its consumer processes start first, the run waits until every member holds partitions,
and only then are the N events produced into the topic, so a run measures the group at its size,
not its rebalances. The window ends when the members' metrics count N event outcomes (polled
more often as the end nears: `Members.until_total`); the completeness check (a realtime mget of
every id) comes after the window.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import orjson
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.config import load_settings
from searchsync.projection import Document, Projector
from searchsync.search.admin import init_index

from bench import procstat
from bench.common import item_errors, missing, progress, run_bounded, topic_ends, wait_for
from bench.consumers import Members

BACKGROUND_S: Final = 1.0  # idle sample before each window: other sessions' load
BULK_SIZE: Final = 500  # the consumer's default elasticsearch.bulk_max_actions
BULK_IN_FLIGHT: Final = 2  # the pipeline's batches.MAX_CONCURRENT
OUTCOMES: Final = "searchsync_event_outcomes_total"

Headers = list[tuple[str, str | bytes | None]]
Message = tuple[int, bytes | None, bytes | None, Headers | None, int]


@dataclass
class Window:
    """One timed run: how many events (or docs), how long, and the CPU seconds per process."""

    kind: str  # "pipeline", "raw" or "replay"
    members: int
    count: int
    seconds: float
    cpu: dict[str, float]  # name -> CPU seconds in the window
    bulks: float = math.nan
    missing: int = 0
    notes: list[str] = field(default_factory=list)
    background: dict[str, float] = field(default_factory=dict)  # CPU s/s in the second before

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else math.nan

    def ms_per_event(self, name: str, *, net: bool = False) -> float:
        """CPU ms per event of `name`; `net`: less its background rate over the window (what
        the process spent on other sessions' work, measured in the second before)."""
        cpu = self.cpu.get(name, math.nan)
        if net and math.isfinite(cpu):
            cpu = max(0.0, cpu - self.background.get(name, 0.0) * self.seconds)
        return 1000 * cpu / max(1, self.count)


def capture(
    bootstrap: str, topic: str, prefix: str, start: Mapping[int, int], n: int
) -> list[Message]:
    """The first `n` messages whose key starts with `prefix`, read from `start` offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-cap-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    out: list[Message] = []
    key_prefix = prefix.encode()
    deadline = time.monotonic() + 180
    try:
        consumer.assign([TopicPartition(topic, p, o) for p, o in start.items()])
        while len(out) < n and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.2):
                key = msg.key()
                if msg.error() is None and key is not None and key.startswith(key_prefix):
                    headers = cast(Headers | None, msg.headers())
                    partition = cast(int, msg.partition())
                    out.append((partition, key, msg.value(), headers, msg.timestamp()[1]))
    finally:
        consumer.close()
    if len(out) < n:
        raise TimeoutError(f"only {len(out)} of {n} events reached Kafka within 180 s")
    return out


def produce(bootstrap: str, topic: str, messages: Sequence[Message]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for partition, key, value, headers, ts in messages:
        while True:
            try:
                producer.produce(topic, value, key, partition, headers=headers, timestamp=ts)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60) != 0:
        raise RuntimeError("could not produce the bench events")


class Runs:
    """Everything a run needs: where the stack is, the events, the ids, the documents."""

    def __init__(
        self,
        base_env: Mapping[str, str],
        es: AsyncElasticsearch,
        projector: Projector,
        messages: Sequence[Message],
        ids: Sequence[str],
        partitions: int,
    ) -> None:
        self.base_env = dict(base_env)
        self.es = es
        self.projector = projector
        self.messages = list(messages)
        self.ids = list(ids)
        self.partitions = partitions
        self.bootstrap = load_settings(self.base_env).kafka.bootstrap_servers
        self.services = procstat.service_pids()
        self.notes: list[str] = []

    def _pids(self, members: Sequence[int]) -> dict[str, int | list[int]]:
        pids: dict[str, int | list[int]] = {"consumer": list(members), "bench": os.getpid()}
        pids.update(self.services)
        return pids

    async def pipeline(
        self, members: int, *, replay: bool = False, python: str | None = None
    ) -> list[Window]:
        """One run with `members` processes; with `replay` also a second pass after an
        ``offsets reset --to earliest`` (one process). With `python` (another checkout's
        interpreter) the members are that consumer, and the window's kind is "compare"."""
        u = uuid.uuid4().hex[:8]
        topic, prefix, group = f"bench-{u}.events", f"bench{u}", f"bench-{u}"
        env = dict(self.base_env)
        env.update(
            {
                "SEARCHSYNC_KAFKA_TOPICS": topic,
                "SEARCHSYNC_KAFKA_GROUP_ID": group,
                "SEARCHSYNC_KAFKA_DLQ_TOPIC": f"{group}.dlq",
                "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "earliest",
                "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": prefix,
            }
        )
        alias = load_settings(env).alias(self.projector.aggregate_type)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(topic, self.partitions, 1)]).values():
            future.result(timeout=30)
        await init_index(
            self.es, alias, self.projector.mapping, schema_version=self.projector.schema_version
        )
        windows: list[Window] = []
        group_members = Members(env, members, label=f"p{members}", python=python)
        kind = "pipeline" if python is None else "compare"
        try:
            await group_members.start()
            await wait_for(group_members.all_assigned, 120, f"{members} members assigned", 0.1)
            windows.append(await self._window(group_members, kind, produce_first=topic))
            windows[-1].missing = len(await missing(self.es, alias, self.ids, version=1))
            if replay:
                await group_members.stop()
                windows.append(await self._replay(env))
        finally:
            await group_members.stop()
            self.notes.extend(group_members.notes)
            await self._drop(admin, topic, group, alias)
        return windows

    async def _replay(self, env: dict[str, str]) -> Window:
        reset = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "searchsync",
            "offsets",
            "reset",
            "--to",
            "earliest",
            "--execute",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
        )
        if await reset.wait() != 0:
            raise RuntimeError("offsets reset --to earliest failed")
        one = Members(env, 1, label="replay")
        background = await self._background(self._pids([]))
        try:
            await one.start()
            await wait_for(one.all_assigned, 120, "replay member assigned", 0.01)
            return await self._window(one, "replay", produce_first=None, background=background)
        finally:
            await one.stop()
            self.notes.extend(one.notes)

    async def _background(self, pids: dict[str, int | list[int]]) -> dict[str, float]:
        """CPU seconds per second each process spends while the bench does nothing."""
        start = procstat.snapshot(pids, time.monotonic())
        await asyncio.sleep(BACKGROUND_S)
        end = procstat.snapshot(pids, time.monotonic())
        return {k: v / (end.at - start.at) for k, v in procstat.cpu_delta(start, end).items()}

    async def _window(
        self,
        group: Members,
        kind: str,
        *,
        produce_first: str | None,
        background: dict[str, float] | None = None,
    ) -> Window:
        n = len(self.messages)
        pids = self._pids(group.pids)
        if background is None:
            background = await self._background(pids)
        before = (await group.totals()).get(OUTCOMES, 0.0)
        bulks0 = (await group.totals()).get("es_write_latency_seconds_count", 0.0)
        start = procstat.snapshot(pids, time.monotonic())
        if produce_first is not None:
            await asyncio.to_thread(produce, self.bootstrap, produce_first, self.messages)
        span = (before, before + n)
        totals = await group.until_total(OUTCOMES, span, start.at, f"{n} outcomes ({kind})")
        end = procstat.snapshot(pids, time.monotonic())
        window = Window(
            kind,
            len(group.pids),
            int(totals[OUTCOMES] - before),
            end.at - start.at,
            procstat.cpu_delta(start, end),
        )
        window.bulks = totals.get("es_write_latency_seconds_count", 0.0) - bulks0
        window.background = background
        progress(
            f"{kind} x{window.members}: {window.count} in {window.seconds:.2f}s"
            f" ({window.rate:.0f}/s)"
        )
        return window

    async def _drop(self, admin: AdminClient, topic: str, group: str, alias: str) -> None:
        with contextlib.suppress(NotFoundError):
            await self.es.indices.delete(index=f"{alias}_v1")
        for futures in (
            admin.delete_consumer_groups([group], request_timeout=15),
            admin.delete_topics([topic, f"{group}.dlq"], operation_timeout=15),
        ):
            for future in futures.values():
                # the DLQ topic exists only if something was dead-lettered
                with contextlib.suppress(Exception):
                    future.result(timeout=30)

    async def raw(self, docs: Sequence[Document]) -> Window:
        """The same documents bulk-indexed straight into a fresh index (500 per bulk, two in
        flight, external versions, through the alias)."""
        raw_alias = f"bench{uuid.uuid4().hex[:8]}raw_{self.projector.aggregate_type}"
        await init_index(
            self.es, raw_alias, self.projector.mapping, schema_version=self.projector.schema_version
        )
        chunks = [docs[s : s + BULK_SIZE] for s in range(0, len(docs), BULK_SIZE)]
        errors = 0

        async def send(chunk: Sequence[Document]) -> None:
            nonlocal errors
            lines: list[bytes] = []
            for doc in chunk:
                meta = {
                    "_index": raw_alias,
                    "_id": doc.doc_id,
                    "version": doc.source_revision,
                    "version_type": "external",
                }
                lines.append(orjson.dumps({"index": meta}))
                lines.append(doc.encoded)
            resp: Any = await self.es.bulk(
                operations=cast(Any, lines), require_alias=True, filter_path="items.*.status"
            )
            errors += item_errors(resp)

        pids = self._pids([])
        background = await self._background(pids)
        start = procstat.snapshot(pids, time.monotonic())
        try:
            await run_bounded(BULK_IN_FLIGHT, [functools.partial(send, c) for c in chunks])
            end = procstat.snapshot(pids, time.monotonic())
        finally:
            with contextlib.suppress(NotFoundError):
                await self.es.indices.delete(index=f"{raw_alias}_v1")
        window = Window("raw", 0, len(docs), end.at - start.at, procstat.cpu_delta(start, end))
        window.bulks = len(chunks)
        window.background = background
        window.missing = errors
        progress(f"raw: {len(docs)} in {window.seconds:.2f}s ({window.rate:.0f}/s)")
        return window


def shared_topic_start(bootstrap: str, topic: str) -> dict[int, int]:
    """The shared topic's current ends (where the bench's own events will follow)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-md-{uuid.uuid4().hex}"}
    )
    try:
        parts = list(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    finally:
        consumer.close()
    return topic_ends(bootstrap, topic, parts)
