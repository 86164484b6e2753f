"""Invariant 14 on a real broker: records deleted past a stopped group's committed offset
(delete-records, as retention would) block that partition, loudly, while the others progress;
`offsets reset --accept-gap` is the way out, and records who accepted what and when."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator

import orjson
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from searchsync.cli import main
from searchsync.config import load_settings
from searchsync.kafka.gaps import GapBoard, GapGuard, HistoryGap
from searchsync.mysql.lineage import GapAck
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.ops.status_probes import group_section

from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import GapAckTable
from tests.integration.consumer_harness import (
    InProcessConsumer,
    harness_env,
    healthz,
    prepare_index,
    run_unwatched,
    wait_for,
)
from tests.integration.kafkatools import fresh_topics, kafka_admin
from tests.timing import deadline as deadline_after

pytestmark = pytest.mark.integration

RECORDS = 6


@pytest.fixture
def names() -> Iterator[tuple[str, dict[str, str]]]:
    topic = f"it.gap.{uuid.uuid4().hex[:12]}"
    env = harness_env("gap", SEARCHSYNC_KAFKA_TOPICS=topic)
    env["SEARCHSYNC_OBSERVABILITY_METRICS_PORT"] = str(_free_port())
    env["SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET"] = "earliest"
    with fresh_topics(KAFKA, [(topic, 3), (env["SEARCHSYNC_KAFKA_DLQ_TOPIC"], 1)]):
        producer = Producer({"bootstrap.servers": KAFKA})
        for partition in (0, 1, 2):
            for i in range(RECORDS):  # not events: each is dead-lettered, which moves the commit
                producer.produce(topic, value=f"poison {i}".encode(), partition=partition)
        assert producer.flush(30) == 0
        yield topic, env


async def _gap_acks_of(env: dict[str, str], group: str) -> list[GapAck]:
    pool = await open_pool(load_settings(env).mysql)
    try:
        return await GapAckTable(pool).of_group(group)
    finally:
        await close_pool(pool)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _reset(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return main(
        ["offsets", "reset", "--to", "earliest", "--partition", "0", "--execute", *argv, "--json"]
    )


async def test_a_partition_past_the_log_start_is_blocked_until_the_gap_is_accepted(
    names: tuple[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic, env = names
    group, port = env["SEARCHSYNC_KAFKA_GROUP_ID"], env["SEARCHSYNC_OBSERVABILITY_METRICS_PORT"]
    admin = kafka_admin(KAFKA)
    p0, p1, p2 = (topic, 0), (topic, 1), (topic, 2)
    # a stopped group at offset 2 of partitions 0 and 1 (2: never committed, read from the start);
    # then 2..3 of partition 0 are deleted
    assert admin.alter_committed(group, {p0: 2, p1: 2}) == {}
    client = AdminClient({"bootstrap.servers": KAFKA})  # kept: its futures need it alive
    deleted = client.delete_records([TopicPartition(topic, 0, 4)])
    for future in deleted.values():
        assert future.result(timeout=30).low_watermark == 4
    assert admin.watermarks(topic)[0].low == 4

    consumer = InProcessConsumer(env)
    await prepare_index(consumer.settings)
    run_unwatched(consumer)

    async def blocked_and_others_done() -> bool:
        assert consumer.task is not None and not consumer.task.done()
        gap = consumer.metric("searchsync_partition_gap_records", topic=topic, partition="0")
        committed = admin.committed(group, [p1, p2])
        return gap == 2 and committed == {p1: RECORDS, p2: RECORDS}

    await wait_for(blocked_and_others_done, 60, "partition 0 blocked, 1 and 2 consumed")
    assert consumer.metric("searchsync_partition_blocked", topic=topic, partition="0") == 1
    assert admin.committed(group, [p0])[p0] == 2  # never reset to the log start
    status, health = await asyncio.to_thread(healthz, port)
    assert status == 503
    reasons = " ".join(str(r) for r in health["reasons"])  # type: ignore[attr-defined]
    assert f"{topic}[0] blocked" in reasons and "2 record(s)" in reasons
    assert "--accept-gap" in reasons
    section = await asyncio.to_thread(group_section, admin, consumer.settings)
    assert any(f"{topic}[0] blocked" in p and "2 record(s)" in p for p in section.problems)
    assert await consumer.close() == 0

    # a restart does not forget it: blocked until the gap is acknowledged
    restarted = InProcessConsumer(env)
    run_unwatched(restarted)

    async def blocked_again() -> bool:
        assert restarted.task is not None and not restarted.task.done()
        return restarted.metric("searchsync_partition_gap_records", topic=topic) == 2

    await wait_for(blocked_again, 60, "partition 0 blocked again after a restart")
    assert admin.committed(group, [p0])[p0] == 2
    assert await restarted.close() == 0

    # without --accept-gap the reset is refused; with it the group moves on, and it is recorded
    await wait_for(
        lambda: asyncio.to_thread(lambda: not admin.active_members(group)), 60, "the group empty"
    )
    assert await asyncio.to_thread(_reset, env, monkeypatch) != 0
    assert "--accept-gap" in capsys.readouterr().err
    assert await asyncio.to_thread(_reset, env, monkeypatch, "--accept-gap") == 0
    report = orjson.loads(capsys.readouterr().out)
    [accepted] = report["accepted_gaps"]
    assert (accepted["committed"], accepted["log_start"], accepted["missing"]) == (2, 4, 2)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
    listed = client.list_consumer_group_offsets([request])[group].result(timeout=30)
    [tp] = listed.topic_partitions
    assert tp.offset == 4 and orjson.loads(tp.metadata) == {"accepted_gap": accepted}
    # the lasting record: the next commit of the partition overwrites that metadata
    [kept] = await _gap_acks_of(env, group)
    assert (kept.topic, kept.partition, kept.committed, kept.log_start) == (topic, 0, 2, 4)
    assert kept.accepted_by == accepted["accepted_by"]

    again = InProcessConsumer(env)
    run_unwatched(again)

    async def all_done() -> bool:
        assert again.task is not None and not again.task.done()
        return admin.committed(group, [p0])[p0] == RECORDS

    await wait_for(all_done, 60, "partition 0 consumed from the log start after the acceptance")
    assert again.metric("searchsync_partition_blocked", topic=topic) == 0
    assert await again.close() == 0


def test_a_position_overtaken_by_retention_is_blocked_from_librdkafkas_error() -> None:
    """The out-of-range error librdkafka raises under auto.offset.reset=error names the failed
    position: the guard blocks the partition with the gap it proves, and reads nothing."""
    topic = f"it.gap.{uuid.uuid4().hex[:12]}"
    group = f"it-gap-{uuid.uuid4().hex[:8]}"
    with fresh_topics(KAFKA, [(topic, 1)]):
        producer = Producer({"bootstrap.servers": KAFKA})
        for i in range(RECORDS):
            producer.produce(topic, value=f"m{i}".encode(), partition=0)
        assert producer.flush(30) == 0
        assert kafka_admin(KAFKA).alter_committed(group, {(topic, 0): 2}) == {}
        client = AdminClient({"bootstrap.servers": KAFKA})
        for future in client.delete_records([TopicPartition(topic, 0, 4)]).values():
            assert future.result(timeout=30).low_watermark == 4
        config = {"bootstrap.servers": KAFKA, "group.id": group, "auto.offset.reset": "error"}
        consumer = Consumer({**config, "enable.auto.commit": False})
        guard = GapGuard(GapBoard(), config, fresh_start="earliest", timeout_s=10)
        try:
            consumer.assign([TopicPartition(topic, 0)])  # at the committed offset, 2
            deadline = deadline_after(30)
            event = None
            while event is None and time.monotonic() < deadline:
                m = consumer.poll(1)
                if m is not None:
                    assert m.error() is not None, f"read offset {m.offset()} over the gap"
                    assert m.error().code() == KafkaError._AUTO_OFFSET_RESET
                    event = m
            assert event is not None, "no out-of-range error within 30 s"
            guard.out_of_range(consumer, event)
            assert guard.board.blocked() == [HistoryGap(topic, 0, 2, 4)]
            assert consumer.poll(2) is None  # nothing is read after the error
        finally:
            consumer.close()
