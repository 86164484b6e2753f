"""Invariant 14 on a real broker, source lineage: a topic deleted and re-created under a stopped
group (Kafka drops the group's offsets with the old topic, and the new one has another topic id)
blocks the partition, loudly, until `offsets reset --accept-gap` adopts the new topic; then the
group reads it."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator

import orjson
import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from searchsync.cli import main
from searchsync.clock import Deadline
from searchsync.config import load_settings
from searchsync.mysql.lineage import MysqlTopicLineage
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.ops.status_probes import group_section

from tests.integration.conftest import KAFKA
from tests.integration.consumer_harness import (
    InProcessConsumer,
    harness_env,
    healthz,
    prepare_index,
    run_unwatched,
    wait_for,
)
from tests.integration.kafkatools import TIMEOUT_S, fresh_topics, kafka_admin

pytestmark = pytest.mark.integration


@pytest.fixture
def names() -> Iterator[tuple[str, dict[str, str]]]:
    topic = f"it.lineage.{uuid.uuid4().hex[:12]}"
    env = harness_env("lineage", SEARCHSYNC_KAFKA_TOPICS=topic)
    env["SEARCHSYNC_OBSERVABILITY_METRICS_PORT"] = str(_free_port())
    env["SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET"] = "earliest"
    with fresh_topics(KAFKA, [(topic, 1), (env["SEARCHSYNC_KAFKA_DLQ_TOPIC"], 1)]):
        yield topic, env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _poison(topic: str, count: int) -> None:
    """`count` records that are not events: each is dead-lettered, which moves the commit."""
    producer = Producer({"bootstrap.servers": KAFKA})
    for i in range(count):
        producer.produce(topic, value=f"poison {i}".encode(), partition=0)
    assert producer.flush(30) == 0


def _recreate(topic: str) -> None:
    """Delete `topic` and create it again (once the broker has finished the deletion)."""
    client = AdminClient({"bootstrap.servers": KAFKA})
    for future in client.delete_topics([topic], operation_timeout=20).values():
        future.result(timeout=TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        created = client.create_topics([NewTopic(topic, 1, 1)], operation_timeout=20)
        try:
            created[topic].result(timeout=TIMEOUT_S)
            break
        except KafkaException:  # the deletion is still under way
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    kafka_admin(KAFKA).wait_for_leaders(topic, Deadline(time.monotonic, TIMEOUT_S))


async def _recorded(env: dict[str, str], group: str) -> dict[str, str]:
    pool = await open_pool(load_settings(env).mysql)
    try:
        return await MysqlTopicLineage(pool).recorded(group)
    finally:
        await close_pool(pool)


def _reset(env: dict[str, str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return main(["offsets", "reset", "--to", "earliest", "--execute", *argv, "--json"])


async def test_a_re_created_topic_is_blocked_until_its_new_lineage_is_accepted(
    names: tuple[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic, env = names
    group, port = env["SEARCHSYNC_KAFKA_GROUP_ID"], env["SEARCHSYNC_OBSERVABILITY_METRICS_PORT"]
    admin, p0 = kafka_admin(KAFKA), (topic, 0)
    _poison(topic, 3)
    [old_id] = admin.topic_ids([topic]).values()

    first = InProcessConsumer(env)
    await prepare_index(first.settings)
    run_unwatched(first)

    async def read_all() -> bool:
        assert first.task is not None and not first.task.done()
        return admin.committed(group, [p0])[p0] == 3

    await wait_for(read_all, 60, "the first topic read to its end")
    assert await _recorded(env, group) == {topic: old_id}
    assert await first.close() == 0

    await wait_for(
        lambda: asyncio.to_thread(lambda: not admin.active_members(group)), 60, "the group empty"
    )
    await asyncio.to_thread(_recreate, topic)
    [new_id] = admin.topic_ids([topic]).values()
    assert new_id != old_id
    assert admin.committed(group, [p0])[p0] is None  # Kafka dropped them with the old topic
    _poison(topic, 2)

    blocked = InProcessConsumer(env)
    run_unwatched(blocked)

    async def lineage_blocked() -> bool:
        assert blocked.task is not None and not blocked.task.done()
        return blocked.metric("searchsync_partition_lineage_mismatch", topic=topic) == 1

    await wait_for(lineage_blocked, 60, "the re-created topic blocked")
    assert blocked.metric("searchsync_partition_blocked", topic=topic, partition="0") == 1
    status, health = await asyncio.to_thread(healthz, port)
    assert status == 503
    reasons = " ".join(str(r) for r in health["reasons"])  # type: ignore[attr-defined]
    assert f"{topic}[0] blocked: source lineage mismatch" in reasons
    assert old_id in reasons and new_id in reasons and "--accept-gap" in reasons
    assert admin.committed(group, [p0])[p0] is None  # nothing of the new topic was read
    assert await blocked.close() == 0
    recorded = await _recorded(env, group)
    section = await asyncio.to_thread(group_section, admin, blocked.settings, recorded)
    assert any(f"{topic}[0] blocked: source lineage mismatch" in p for p in section.problems)

    await wait_for(
        lambda: asyncio.to_thread(lambda: not admin.active_members(group)), 60, "the group empty"
    )
    assert await asyncio.to_thread(_reset, env, monkeypatch) != 0
    assert "source lineage mismatch" in capsys.readouterr().err
    assert await asyncio.to_thread(_reset, env, monkeypatch, "--accept-gap") == 0
    report = orjson.loads(capsys.readouterr().out)
    [accepted] = report["accepted_lineage"]
    assert (accepted["recorded_id"], accepted["current_id"]) == (old_id, new_id)
    assert await _recorded(env, group) == {topic: new_id}

    released = InProcessConsumer(env)
    run_unwatched(released)

    async def new_topic_read() -> bool:
        assert released.task is not None and not released.task.done()
        return admin.committed(group, [p0])[p0] == 2

    await wait_for(new_topic_read, 60, "the re-created topic read after the acceptance")
    assert released.metric("searchsync_partition_blocked", topic=topic) == 0
    assert released.metric("searchsync_partition_lineage_mismatch", topic=topic) == 0
    assert await released.close() == 0


async def test_a_topic_re_created_under_a_running_member_stops_it_and_blocks_the_next(
    names: tuple[str, dict[str, str]],
) -> None:
    """librdkafka keeps fetching a re-created topic at the old position: with more records than
    that, it would read on and skip the new topic's first ones. The member's lineage watch sees
    the new topic id, stops the member (exit 1), and the next assignment blocks the partition."""
    topic, env = names
    env = {**env, "SEARCHSYNC_KAFKA_LINEAGE_CHECK_S": "0.5"}
    group, admin, p0 = env["SEARCHSYNC_KAFKA_GROUP_ID"], kafka_admin(KAFKA), (topic, 0)
    _poison(topic, 3)
    running = InProcessConsumer(env)
    await prepare_index(running.settings)
    run_unwatched(running)

    async def read_all() -> bool:
        assert running.task is not None and not running.task.done()
        return admin.committed(group, [p0])[p0] == 3

    await wait_for(read_all, 60, "the first topic read to its end")
    await asyncio.to_thread(_recreate, topic)
    _poison(topic, 12)  # past the old position at once

    async def stopped() -> bool:
        assert running.task is not None
        return running.task.done()

    await wait_for(stopped, 60, "the member stopped by its lineage watch")
    assert running.task is not None and running.task.result() == 1

    restarted = InProcessConsumer(env)
    run_unwatched(restarted)

    async def blocked() -> bool:
        assert restarted.task is not None and not restarted.task.done()
        return restarted.metric("searchsync_partition_lineage_mismatch", topic=topic) == 1

    await wait_for(blocked, 60, "the re-created topic blocked after the restart")
    assert await restarted.close() == 0
