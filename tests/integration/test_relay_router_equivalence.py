"""A consumer cannot tell the relay's records from Debezium's (docs/relay.md).

The same outbox rows are published twice: by the real Debezium connector with its Outbox Event
Router (rows of ``search_outbox``, written by the application's writer), and by the relay (the
very same rows, copied column for column into a scratch outbox that Debezium does not capture,
published to a fresh topic with as many partitions as the router's topic). Each pair of records
must agree on key, value (bytes, JSON and the consumer's decoded thin event), the router's
headers (Debezium's own ``__debezium.context.*`` headers aside) and partition, and the relay's
topic for the row must be the router's.
"""

from __future__ import annotations

import json
from dataclasses import replace

import aiomysql
import pytest
from confluent_kafka import Message
from searchsync.config import RelaySettings
from searchsync.events import decode
from searchsync.kafka.producer import AcknowledgedProducer
from searchsync.relay.mysql_store import MysqlRelayStore
from searchsync.relay.port import PARTITIONER, OutboxEntry, router_record
from searchsync.relay.relay import Relay
from searchsync.writer import PageWriter

from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import fetch_all
from tests.integration.kafkatools import TopicTail, fresh_topics, kafka_admin
from tests.integration.relay_scratch import *  # noqa: F403  (the scratch_outbox fixture)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

ROUTER_TOPIC = "outbox.event.wiki_page"
DEADLINE_S = 90.0


def _headers(m: Message) -> list[tuple[str, bytes]]:
    return [(k, v) for k, v in m.headers() or [] if not k.startswith("__debezium.")]


def _event_id(m: Message) -> str:
    return dict(m.headers() or [])["id"].decode()


async def test_a_relay_record_equals_the_debezium_record_of_the_same_row(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, scratch_outbox: str, id_prefix: str
) -> None:
    partitions = len(kafka_admin(KAFKA).watermarks(ROUTER_TOPIC))
    relay_topic = f"{id_prefix}relay.wiki_page"
    page = f"{id_prefix}é 日本"  # non-ASCII in the key and in the JSON value
    with fresh_topics(KAFKA, [(relay_topic, partitions)]):
        debezium_tail, relay_tail = TopicTail(KAFKA, ROUTER_TOPIC), TopicTail(KAFKA, relay_topic)
        writer = PageWriter(app_pool)
        await writer.create(page, "Relay", "or Debezium", {})
        await writer.soft_delete(page)
        rows = await fetch_all(
            consumer_pool,
            "SELECT event_id FROM search_outbox WHERE aggregate_id = %s ORDER BY id",
            (page,),
        )
        ids = [r["event_id"] for r in rows]
        assert len(ids) == 2
        async with consumer_pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute(
                f"INSERT INTO `{scratch_outbox}` SELECT * FROM search_outbox"
                " WHERE aggregate_id = %s ORDER BY id",
                (page,),
            )
            await conn.commit()

        producer = AcknowledgedProducer({"bootstrap.servers": KAFKA, **PARTITIONER}, name="it-eq")
        store = MysqlRelayStore(consumer_pool, scratch_outbox)
        settings = replace(
            RelaySettings(), table=scratch_outbox, topic_template=f"{id_prefix}relay.{{type}}"
        )
        try:
            report = await Relay(store, producer, settings, holder="it-eq").tick()
            assert report.published == 2
        finally:
            await producer.close(10.0)

        def ours(ms: list[Message]) -> bool:
            return {_event_id(m) for m in ms if m.key() == page.encode()} >= set(ids)

        from_debezium = {
            _event_id(m): m for m in debezium_tail.read_until(ours, DEADLINE_S)
            if m.key() == page.encode()
        }  # fmt: skip
        from_relay = {_event_id(m): m for m in relay_tail.read_until(ours, DEADLINE_S)}
        debezium_tail.close()
        relay_tail.close()

    # the relay's default topic for these rows is the router's
    entry = OutboxEntry(0, ids[0], "wiki_page", page, "UPSERT", 1, "{}", 0)
    assert router_record(entry, RelaySettings().topic_template).topic == ROUTER_TOPIC
    known = ["wiki_page"]
    for event_id in ids:
        d, r = from_debezium[event_id], from_relay[event_id]
        assert r.key() == d.key() == page.encode()
        assert r.value() == d.value()
        assert json.loads(r.value()) == json.loads(d.value())
        assert decode(r.value(), max_bytes=1 << 20, known_types=known) == decode(
            d.value(), max_bytes=1 << 20, known_types=known
        )
        assert _headers(r) == _headers(d)
        assert [k for k, _ in _headers(d)] == [
            "id",
            "searchsync-operation",
            "searchsync-revision",
            "searchsync-aggregate-type",
        ]
        assert r.partition() == d.partition()
    ops = [dict(_headers(from_relay[e]))["searchsync-operation"] for e in ids]
    assert ops == [b"UPSERT", b"TOMBSTONE"]
