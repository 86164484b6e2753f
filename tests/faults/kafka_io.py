"""Kafka for the fault run: hostile messages, replays of old events, offsets, the DLQ."""

from __future__ import annotations

import json
import random
import uuid
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from searchsync.config import Settings
from searchsync.dlq.replay import inspect
from searchsync.dlq.scan import DlqTopic
from searchsync.ops import offsets

from tests.faults.evidence import Hostile

NEAR_1MB = 1_000_000 - 4096  # under librdkafka's and the broker's 1 MB message limit


def hostile_messages(key_prefix: str) -> list[tuple[str, bytes, str]]:
    """(what, value, the error code the consumer must dead-letter it with)."""

    def event(**fields: Any) -> bytes:
        base: dict[str, Any] = {
            "event_id": str(uuid.uuid4()),
            "aggregate_type": "wiki_page",
            "aggregate_id": f"{key_prefix}hostile",
            "operation": "UPSERT",
            "source_revision": 1,
        }
        base.update(fields)
        return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()

    return [
        ("garbage bytes", b"\xff\xfe\x00garbage\x01\x02", "BAD_JSON"),
        ("near-1MB payload", b'{"pad":"' + b"x" * (NEAR_1MB - 10) + b'"}', "TOO_LARGE"),
        ("wrong type", event(aggregate_id=12345), "BAD_FIELD"),
        ("unknown aggregate type", event(aggregate_type="no_such_type"), "UNKNOWN_AGGREGATE_TYPE"),
        ("negative revision", event(source_revision=-3), "BAD_REVISION"),
        ("string revision", event(source_revision="7"), "BAD_REVISION"),
        ("missing field", event(event_id=...), "MISSING_FIELD"),
        ("JSON array", b'[{"event_id": "x"}]', "BAD_JSON"),
    ]


def produce_hostile(bootstrap: str, topic: str, key_prefix: str) -> list[Hostile]:
    producer = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 1_048_576})
    out: list[Hostile] = []
    errors: list[str] = []
    for what, value, code in hostile_messages(key_prefix):

        def report(err: Any, msg: Any, what: str = what, code: str = code) -> None:
            if err is not None:
                errors.append(f"{what}: {err}")
            else:
                out.append(Hostile(what, msg.partition(), msg.offset(), code))

        producer.produce(topic, key=f"{key_prefix}hostile".encode(), value=value, callback=report)
    if producer.flush(60) != 0 or errors:
        raise AssertionError(f"hostile messages not delivered: {errors}")
    return out


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"faults-{uuid.uuid4().hex}"})
    try:
        meta = c.list_topics(topic, timeout=30).topics[topic]
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in meta.partitions
        }
    finally:
        c.close()


def committed(bootstrap: str, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = c.committed([TopicPartition(topic, p) for p in partitions], timeout=30)
        return {tp.partition: tp.offset for tp in got if tp.offset >= 0}
    finally:
        c.close()


def lag(bootstrap: str, group: str, topics: Iterable[str]) -> int:
    """The group's lag over every partition of `topics` (end offset - committed offset)."""
    total = 0
    for topic in topics:
        ends = end_offsets(bootstrap, topic)
        done = committed(bootstrap, group, topic, list(ends))
        total += sum(max(0, e - done.get(p, 0)) for p, e in ends.items())
    return total


def start_at_end(settings: Settings) -> dict[str, dict[int, int]]:
    """Start the settings' (new) group at the end of each of its topics (`searchsync offsets
    reset --to latest`); per topic, its partitions' start offsets."""
    report = offsets.reset(settings, "latest", dry_run=False)
    out: dict[str, dict[int, int]] = {}
    for step in report.steps:
        out.setdefault(step.topic, {})[step.partition] = step.target
    return out


def replay_sample(
    bootstrap: str,
    topic: str,
    start: dict[int, int],
    n: int,
    rng: random.Random,
    key_prefix: str,
) -> int:
    """Re-publish a shuffled sample of up to `n` of the run's events (keys with `key_prefix`)
    written since `start`: duplicates, and stale events arriving after newer ones. Returns how
    many were re-published. Other tests' events on a shared topic are left alone."""
    ends = end_offsets(bootstrap, topic)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"faults-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    seen: list[tuple[bytes, bytes]] = []
    try:
        todo = {p: ends[p] for p in ends if ends[p] > start.get(p, 0)}
        c.assign([TopicPartition(topic, p, start.get(p, 0)) for p in todo])
        while todo:
            msgs = c.consume(500, timeout=5)
            if not msgs:
                break
            for m in msgs:
                if m.error() is not None:
                    continue
                key, value = m.key() or b"", m.value() or b""
                if key.startswith(key_prefix.encode()) and _is_event(value):
                    seen.append((key, value))
                partition, offset = m.partition() or 0, m.offset() or 0
                if offset + 1 >= todo.get(partition, 0):
                    todo.pop(partition, None)
    finally:
        c.close()
    sample = rng.sample(seen, min(n, len(seen)))
    rng.shuffle(sample)
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in sample:
        producer.produce(topic, key=key, value=value)
    if producer.flush(60) != 0:
        raise AssertionError("replayed events not delivered")
    return len(sample)


def _is_event(value: bytes | None) -> bool:
    """A real wiki_page event (hostile messages are not replayed: they would only be
    dead-lettered again and spend the group's DLQ budget)."""
    if not value or value[:1] != b"{" or len(value) > 10_000:
        return False
    try:
        doc = json.loads(value)
    except ValueError:
        return False
    if not isinstance(doc, dict):
        return False
    rev = doc.get("source_revision")
    return doc.get("aggregate_type") == "wiki_page" and type(rev) is int and rev >= 1


def dead_letters(client_config: dict[str, Any], dlq_topic: str) -> dict[tuple[int, int], set[str]]:
    out: dict[tuple[int, int], set[str]] = defaultdict(set)
    for entry in inspect(DlqTopic(client_config, dlq_topic), limit=100_000, from_beginning=True):
        r = entry.record
        if r.original_partition is not None and r.original_offset is not None:
            out[(r.original_partition, r.original_offset)].add(r.last_error_code)
    return out
