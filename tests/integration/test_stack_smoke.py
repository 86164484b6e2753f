"""Smoke tests of the local stack: MariaDB -> Debezium outbox router -> Kafka, and Elasticsearch."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import orjson
import pymysql
import pytest
from elasticsearch import AsyncElasticsearch

from tests.integration.conftest import ES_URL, KAFKA
from tests.integration.kafkatools import TopicTail

pytestmark = pytest.mark.integration

TOPIC = "outbox.event.wiki_page"


@pytest.fixture
def db() -> Iterator[pymysql.connections.Connection]:
    conn = pymysql.connect(
        host=os.environ.get("SEARCHSYNC_MYSQL_HOST", "127.0.0.1"),
        port=int(os.environ.get("SEARCHSYNC_MYSQL_PORT", "3306")),
        user=os.environ.get("APP_DB_USER", "searchsync_app"),
        password=os.environ.get("APP_DB_PASSWORD", "searchsync_app"),
        database=os.environ.get("SEARCHSYNC_MYSQL_DATABASE", "searchsync"),
        autocommit=False,
    )
    yield conn
    conn.close()


@pytest.fixture
def tail() -> Iterator[TopicTail]:
    t = TopicTail(KAFKA, TOPIC)
    yield t
    t.close()


def _change_page(cur: pymysql.cursors.Cursor, page_id: str) -> tuple[str, int]:
    """Create or bump the page and append its outbox row; the caller commits or rolls back."""
    cur.execute("SELECT revision FROM wiki_page WHERE id = %s FOR UPDATE", (page_id,))
    row = cur.fetchone()
    revision = 1 if row is None else int(row[0]) + 1
    cur.execute(
        "INSERT INTO wiki_page (id, title, content, relations_json, revision, updated_at)"
        " VALUES (%s, 'smoke', 'smoke test', '{}', %s, NOW(6))"
        " ON DUPLICATE KEY UPDATE revision = VALUES(revision), updated_at = NOW(6)",
        (page_id, revision),
    )
    event_id = str(uuid.uuid4())
    payload = orjson.dumps(
        {
            "event_id": event_id,
            "aggregate_type": "wiki_page",
            "aggregate_id": page_id,
            "operation": "UPSERT",
            "source_revision": revision,
        }
    )
    cur.execute(
        "INSERT INTO search_outbox (event_id, aggregate_type, aggregate_id, operation,"
        " source_revision, payload, available_at, created_at, updated_at)"
        " VALUES (%s, 'wiki_page', %s, 'UPSERT', %s, %s, NOW(6), NOW(6), NOW(6))",
        (event_id, page_id, revision, payload),
    )
    return event_id, revision


def _events(messages: list) -> list[dict]:  # type: ignore[type-arg]
    return [orjson.loads(m.value()) for m in messages]


def test_committed_change_is_routed_to_kafka(
    db: pymysql.connections.Connection, tail: TopicTail
) -> None:
    page_id = f"smoke-{uuid.uuid4().hex[:12]}"
    with db.cursor() as cur:
        _change_page(cur, page_id)
        db.commit()
        event_id, revision = _change_page(cur, page_id)
        db.commit()
    assert revision == 2

    msgs = tail.read_until(
        lambda ms: any(e["event_id"] == event_id for e in _events(ms)), timeout=60
    )
    (msg,) = [m for m in msgs if orjson.loads(m.value())["event_id"] == event_id]
    assert msg.topic() == TOPIC
    assert msg.key() == page_id.encode()
    assert orjson.loads(msg.value()) == {
        "event_id": event_id,
        "aggregate_type": "wiki_page",
        "aggregate_id": page_id,
        "operation": "UPSERT",
        "source_revision": 2,
    }
    # the router also puts the event id in a header
    assert (b"id", event_id.encode()) in [(k.encode(), v) for k, v in msg.headers()]


def test_rolled_back_transaction_produces_no_event(
    db: pymysql.connections.Connection, tail: TopicTail
) -> None:
    page_id = f"smoke-rb-{uuid.uuid4().hex[:12]}"
    with db.cursor() as cur:
        rolled_back_event, _ = _change_page(cur, page_id)
        db.rollback()
        cur.execute("SELECT COUNT(*) FROM wiki_page WHERE id = %s", (page_id,))
        assert cur.fetchone() == (0,)
        # a committed marker of the same key after the rollback: same partition, so once it
        # arrives anything of the rolled-back transaction would have arrived before it
        marker_event, marker_revision = _change_page(cur, page_id)
        db.commit()
    assert marker_revision == 1  # the rolled-back revision left no trace

    msgs = tail.read_until(
        lambda ms: any(e["event_id"] == marker_event for e in _events(ms)), timeout=60
    )
    assert rolled_back_event not in {e["event_id"] for e in _events(msgs)}


async def test_elasticsearch_answers_through_the_python_client() -> None:
    async with AsyncElasticsearch(ES_URL) as es:
        health = await es.cluster.health(wait_for_status="yellow", timeout="10s")
        assert health["status"] in ("yellow", "green")
        index = f"smoke-{uuid.uuid4().hex[:12]}"
        try:
            await es.index(
                index=index, id="1", document={"x": 1}, version=7, version_type="external"
            )
            got = await es.get(index=index, id="1")
            assert got["_version"] == 7
            assert got["_source"] == {"x": 1}
        finally:
            await es.indices.delete(index=index, ignore_unavailable=True)
