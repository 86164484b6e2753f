"""Deleting outbox rows puts nothing on the outbox topic (docs/design.md, "Outbox pruning").

Both ways rows go away are run on the real stack: `searchsync outbox prune`'s bounded deletes (as
the consumer's MySQL user, which proves its DELETE grant) and the writer's
``delete_outbox_row=True`` (insert and delete in one transaction). Each test reads the topic from
the end offsets taken before it writes, waits until Debezium has certainly read past its deletes
(a normal event written after them has arrived), and checks that nothing between the two points
concerns its rows except the events of the inserts and that one normal event.

Other tests write to the same table and topic at the same time: the prune here only ever touches
rows created in 2001 (the writer's clock is set there) starting at the table's max id taken
before the test wrote, and the assertions only look at this test's keys.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import aiomysql
import pytest
from confluent_kafka import Message

from consumer.config import ConnectSettings, RetentionSettings
from consumer.kafka.connect import ConnectClient
from consumer.mysql.outbox import MysqlOutbox
from consumer.ops.prune import prune_outbox
from consumer.writer import PageWriter
from tests.integration.conftest import CONNECT_URL, KAFKA
from tests.integration.conftest_mysql import fetch_all
from tests.integration.kafkatools import TopicTail

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPIC = "outbox.event.wiki_page"
LONG_AGO = datetime(2001, 1, 1, tzinfo=UTC)
DEADLINE_S = 120.0


def _key(m: Message) -> str:
    key = m.key()
    return key.decode() if isinstance(key, bytes) else ""


def _header(m: Message, name: str) -> str | None:
    for key, value in m.headers() or []:
        if key == name and isinstance(value, bytes):
            return value.decode()
    return None


async def _rows_of(pool: aiomysql.Pool, ids: list[str]) -> list[dict[str, object]]:
    marks = ",".join(["%s"] * len(ids))
    return await fetch_all(
        pool,
        f"SELECT id, aggregate_id, operation FROM search_outbox WHERE aggregate_id IN ({marks})",
        tuple(ids),
    )


async def _read_until_sentinel(tail: TopicTail, sentinel: str) -> list[Message]:
    return await asyncio.to_thread(
        tail.read_until, lambda seen: any(_key(m) == sentinel for m in seen), DEADLINE_S
    )


def _assert_only(messages: list[Message], mine: set[str], expected: list[tuple[str, str]]) -> None:
    """Of `messages`, those with one of `mine` as key are exactly `expected` (key, operation)
    in order, each with a value; and no message at all is a Kafka tombstone (null value)."""
    assert [m for m in messages if m.value() is None] == []
    got = [(_key(m), _header(m, "searchsync-operation")) for m in messages if _key(m) in mine]
    assert got == expected
    assert all(m.value() for m in messages if _key(m) in mine)


async def test_pruned_rows_put_nothing_on_the_topic(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    pages = [f"prune-{u}-{i}" for i in range(3)]
    sentinel = f"prune-{u}-sentinel"
    [top] = await fetch_all(app_pool, "SELECT COALESCE(MAX(id), 0) AS m FROM search_outbox", ())
    tail = TopicTail(KAFKA, TOPIC)
    try:
        old = PageWriter(app_pool, clock=lambda: LONG_AGO)
        for page in pages:
            await old.create(page, "Old", "row", {})
        await old.update(pages[0], content="again")
        # the inserts are published first: Debezium has captured them
        inserts = await asyncio.to_thread(
            tail.read_until,
            lambda seen: sum(_key(m) in pages for m in seen) == 4,
            DEADLINE_S,
        )
        assert len(await _rows_of(app_pool, pages)) == 4

        report = await prune_outbox(
            MysqlOutbox(consumer_pool),  # the consumer's user: DELETE on search_outbox only
            ConnectClient(ConnectSettings(url=CONNECT_URL)),
            RetentionSettings(prune_batch_size=2, prune_pause_s=0.01),
            timedelta(days=365 * 20),  # rows created before ~2006: this test's alone
            now=datetime.now(UTC),
            after_id=int(top["m"]),  # type: ignore[call-overload]
        )
        assert report.deleted == 4 and report.connector.running
        assert await _rows_of(app_pool, pages) == []

        await PageWriter(app_pool).create(sentinel, "After", "the prune", {})
        after = await _read_until_sentinel(tail, sentinel)
    finally:
        tail.close()
    published = sorted((_key(m), _header(m, "searchsync-revision")) for m in inserts)
    assert [p for p in published if p[0] in pages] == sorted(
        [(pages[0], "1"), (pages[0], "2"), (pages[1], "1"), (pages[2], "1")]
    )
    # between the inserts and the sentinel: nothing of these rows, though all four were deleted
    _assert_only(after, {*pages, sentinel}, [(sentinel, "UPSERT")])


async def test_rows_deleted_in_their_own_transaction_are_published_once_and_gone(
    app_pool: aiomysql.Pool,
) -> None:
    u = uuid.uuid4().hex[:8]
    page, sentinel = f"dtx-{u}", f"dtx-{u}-sentinel"
    tail = TopicTail(KAFKA, TOPIC)
    try:
        writer = PageWriter(app_pool, delete_outbox_row=True)
        await writer.create(page, "Empty", "outbox", {})
        await writer.update(page, content="still empty")
        await writer.soft_delete(page)
        await writer.restore(page)
        await writer.hard_delete(page)
        assert await _rows_of(app_pool, [page]) == []  # the table keeps no history
        await PageWriter(app_pool).create(sentinel, "After", "the deletes", {})
        seen = await _read_until_sentinel(tail, sentinel)
    finally:
        tail.close()
    operations = ["UPSERT", "UPSERT", "TOMBSTONE", "UPSERT", "TOMBSTONE"]
    _assert_only(seen, {page, sentinel}, [(page, op) for op in operations] + [(sentinel, "UPSERT")])
    revisions = [_header(m, "searchsync-revision") for m in seen if _key(m) == page]
    assert revisions == ["1", "2", "3", "4", "5"]
