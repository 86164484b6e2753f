"""`searchsync exporter` on the real stack: the group's lag and oldest event read at the broker
with no member alive, and the canary's heartbeat through MariaDB, Debezium, Kafka, the consumer
and Elasticsearch. Waits have deadlines."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from datetime import datetime

import aiomysql
import pytest
import pytest_asyncio
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from searchsync.clock import utc_now
from searchsync.config import load_settings
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client
from searchsync.watch.canary import CANARY_TYPE, MysqlEsCanary, projectors
from searchsync.watch.exporter import Exporter, ExporterMetrics
from searchsync.watch.group import KafkaPeek, observe_group

from tests.integration import conftest_mysql as fx
from tests.integration.conftest import KAFKA
from tests.integration.consumer_harness import (
    InProcessConsumer,
    harness_env,
    wait_for,
)
from tests.integration.kafkatools import fresh_topics, kafka_admin

mysql_target = fx.mysql_target
consumer_pool = fx.consumer_pool

pytestmark = pytest.mark.integration

CANARY_TOPIC = f"outbox.event.{CANARY_TYPE}"


def test_the_exporter_reports_lag_for_a_group_with_no_live_member() -> None:
    topic, group = f"it-exporter-{uuid.uuid4().hex[:8]}", f"it-exporter-{uuid.uuid4().hex[:8]}"
    settings = load_settings(
        {
            **os.environ,
            "SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": KAFKA,
            "SEARCHSYNC_KAFKA_GROUP_ID": group,
            "SEARCHSYNC_KAFKA_TOPICS": topic,
        }
    )
    with fresh_topics(KAFKA, [(topic, 2)]):
        producer = Producer({"bootstrap.servers": KAFKA})
        sent_at_ms = int(utc_now().timestamp() * 1000)
        for i in range(7):
            producer.produce(topic, value=b"x", partition=i % 2, timestamp=sent_at_ms - 60_000)
        assert producer.flush(30) == 0
        admin = kafka_admin(KAFKA)
        # a group that finished partition 0 up to offset 1 and never committed partition 1
        assert admin.alter_committed(group, {(topic, 0): 1, (topic, 1): 0}) == {}
        peek = KafkaPeek(settings.kafka.client_config(), group, timeout_s=10)
        try:
            view = observe_group(admin, settings, peek, now_ms=sent_at_ms)
        finally:
            peek.close()
    assert view.members == 0
    assert [(p.partition, p.lag) for p in view.partitions] == [(0, 3), (1, 3)]
    assert view.lag == 6
    assert view.oldest_age_s == 60.0  # the timestamp of the message at the committed offset
    metrics = ExporterMetrics(1, canary=False)
    metrics.set_group(view)
    text = metrics.render().decode()
    assert "outbox_pending_count 6.0" in text
    assert "searchsync_group_members 0.0" in text


def _ensure_topic(name: str) -> None:
    client = AdminClient({"bootstrap.servers": KAFKA})
    created = client.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=1)], operation_timeout=20
    )
    try:
        created[name].result(timeout=30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


@pytest_asyncio.fixture(loop_scope="session")
async def canary_consumer() -> AsyncIterator[InProcessConsumer]:
    """A consumer of the canary's topic with the canary's projector and index."""
    await asyncio.to_thread(_ensure_topic, CANARY_TOPIC)
    consumer = InProcessConsumer(
        harness_env(
            "canary",
            SEARCHSYNC_KAFKA_TOPICS=CANARY_TOPIC,
            SEARCHSYNC_PROJECTION_MODULES="searchsync.watch.canary",
            SEARCHSYNC_CANARY_INTERVAL_S="1",
        )
    )
    (projector,) = projectors()
    es = make_es_client(consumer.settings)
    try:
        await init_index(
            es,
            consumer.settings.alias(CANARY_TYPE),
            projector.mapping,
            schema_version=projector.schema_version,
        )
    finally:
        await es.close()
    await consumer.start()
    try:
        yield consumer
    finally:
        assert await consumer.close() == 0
        es = make_es_client(consumer.settings)
        try:
            await es.indices.delete(index=f"{consumer.settings.alias(CANARY_TYPE)}_v1")
        finally:
            await es.close()


@pytest.mark.asyncio(loop_scope="session")
async def test_the_canary_age_drops_once_a_heartbeat_is_searchable(
    canary_consumer: InProcessConsumer, consumer_pool: aiomysql.Pool
) -> None:
    settings = canary_consumer.settings
    es = make_es_client(settings)
    store = index = MysqlEsCanary(consumer_pool, es, settings.canary_id())
    exporter = Exporter(
        settings,
        admin=kafka_admin(KAFKA),
        peek=KafkaPeek(settings.kafka.client_config(), "unused", timeout_s=1),
        metrics=ExporterMetrics(1, canary=True),
        canary=store,
        wall_clock=utc_now,
    )
    alias = settings.alias(CANARY_TYPE)

    def age() -> float:
        value = exporter.metrics.registry.get_sample_value("searchsync_canary_age_seconds")
        assert value is not None
        return value

    async def searchable(at: datetime) -> bool:
        return await index.beat_at(alias) == at

    try:
        first = utc_now()
        await store.beat(first)
        await wait_for(lambda: searchable(first), 60, "the first heartbeat searchable")
        second = utc_now()
        await store.beat(second)
        await exporter.read_canary()
        before = age()  # still the first heartbeat's age, or already the second's
        await wait_for(lambda: searchable(second), 60, "the second heartbeat searchable")
        await exporter.read_canary()
        after = age()
        assert after <= (utc_now() - second).total_seconds()
        assert after < (utc_now() - first).total_seconds()
        assert before >= 0 and after < 60
    finally:
        await es.close()
