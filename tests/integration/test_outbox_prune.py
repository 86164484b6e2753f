"""Deleting outbox rows puts nothing on the outbox topic (docs/design.md, "Outbox pruning").

Both ways rows go away are run on the real stack: `searchsync outbox prune`'s bounded deletes (as
the consumer's MySQL user, which proves its DELETE grant) and the writer's
``delete_outbox_row=True`` (insert and delete in one transaction). Each test reads the topic from
the end offsets taken before it writes, waits until Debezium has certainly read past its deletes
(a normal event written after them has arrived, and then every partition is read up to its end
offsets of that moment: Debezium reads the binlog in order, so anything the deletes produced was
produced before the sentinel), and checks that nothing between the two points concerns its rows
except the events of the inserts and that one normal event.

Other tests write to the same table and topic at the same time: the prune here only ever touches
rows created in 2001 (the writer's clock is set there) starting at the table's max id taken
before the test wrote, and the assertions only look at this test's keys.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from contextlib import aclosing
from datetime import UTC, datetime, timedelta

import aiomysql
import pytest
from confluent_kafka import Consumer, Message, TopicPartition
from searchsync.cli import main
from searchsync.config import ConnectSettings, RetentionSettings
from searchsync.exit_codes import ExitCode
from searchsync.kafka.connect import MISSING, ConnectClient
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.ops.retention import prune_outbox
from searchsync.writer import PageWriter

from tests.integration.conftest import CONNECT_URL, KAFKA
from tests.integration.conftest_mysql import fetch_all
from tests.integration.kafkatools import kafka_admin
from tests.timing import deadline as deadline_after

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


class Tail:
    """Every partition of the topic from its end offsets at construction, before the test writes.

    Keys spread over partitions, and Kafka orders messages within a partition only: `drain`
    reads every partition up to the end offsets of the moment it is called.
    """

    def __init__(self) -> None:
        self._start = {p: m.high for p, m in kafka_admin(KAFKA).watermarks(TOPIC).items()}
        self._consumer = Consumer(
            {
                "bootstrap.servers": KAFKA,
                "group.id": f"searchsync-test-prune-{time.monotonic_ns()}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
            }
        )
        self._consumer.assign([TopicPartition(TOPIC, p, o) for p, o in self._start.items()])
        self._last: dict[int, int] = {}

    def read_until(self, done: Callable[[list[Message]], bool]) -> list[Message]:
        seen: list[Message] = []
        deadline = deadline_after(DEADLINE_S)
        while not done(seen):
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met in {DEADLINE_S}s; saw {len(seen)}")
            for m in self._consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None:
                    seen.append(m)
                    self._last[m.partition()] = m.offset()
        return seen

    def drain(self) -> list[Message]:
        """Read on until every partition is at its end offset of now."""
        ends = {p: m.high for p, m in kafka_admin(KAFKA).watermarks(TOPIC).items()}

        def at_end(_: list[Message]) -> bool:
            return all(
                self._start.get(p, 0) >= end or self._last.get(p, -1) >= end - 1
                for p, end in ends.items()
            )

        return self.read_until(at_end)

    def close(self) -> None:
        self._consumer.close()


async def _read_past_sentinel(tail: Tail, sentinel: str) -> list[Message]:
    """Everything up to the sentinel's arrival, and then up to every partition's end."""
    seen = await asyncio.to_thread(tail.read_until, lambda s: any(_key(m) == sentinel for m in s))
    return seen + await asyncio.to_thread(tail.drain)


def _by_key(messages: list[Message], mine: set[str]) -> dict[str, list[str | None]]:
    """The operations of each key of `mine`, in the order of its partition."""
    out: dict[str, list[str | None]] = {}
    for m in messages:
        if _key(m) in mine:
            out.setdefault(_key(m), []).append(_header(m, "searchsync-operation"))
    return out


def _assert_only(
    messages: list[Message], mine: set[str], expected: dict[str, list[str | None]]
) -> None:
    """Of `messages`, those keyed by one of `mine` are exactly `expected` (each key's
    operations in order), each with a value; no message at all is a Kafka tombstone."""
    assert [m for m in messages if m.value() is None] == []
    assert _by_key(messages, mine) == expected
    assert all(m.value() for m in messages if _key(m) in mine)


async def test_pruned_rows_put_nothing_on_the_topic(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    u = uuid.uuid4().hex[:8]
    pages = [f"prune-{u}-{i}" for i in range(3)]
    sentinel = f"prune-{u}-sentinel"
    [top] = await fetch_all(app_pool, "SELECT COALESCE(MAX(id), 0) AS m FROM search_outbox", ())
    tail = Tail()
    try:
        old = PageWriter(app_pool, clock=lambda: LONG_AGO)
        for page in pages:
            await old.create(page, "Old", "row", {})
        await old.update(pages[0], content="again")
        # the inserts are published first: Debezium has captured them
        inserts = await asyncio.to_thread(
            tail.read_until, lambda seen: sum(_key(m) in pages for m in seen) == 4
        )
        assert len(await _rows_of(app_pool, pages)) == 4

        async with aclosing(ConnectClient(ConnectSettings(url=CONNECT_URL))) as connect:
            report = await prune_outbox(
                MysqlOutbox(consumer_pool),  # the consumer's user: DELETE on search_outbox only
                connect,
                RetentionSettings(prune_batch_size=2, prune_pause_s=0.01),
                timedelta(days=365 * 20),  # rows created before ~2006: this test's alone
                now=datetime.now(UTC),
                after_id=int(top["m"]),  # type: ignore[call-overload]
            )
        assert report.deleted == 4 and report.connector.running
        assert await _rows_of(app_pool, pages) == []

        await PageWriter(app_pool).create(sentinel, "After", "the prune", {})
        after = await _read_past_sentinel(tail, sentinel)
    finally:
        tail.close()
    published = sorted((_key(m), _header(m, "searchsync-revision")) for m in inserts)
    assert [p for p in published if p[0] in pages] == sorted(
        [(pages[0], "1"), (pages[0], "2"), (pages[1], "1"), (pages[2], "1")]
    )
    # between the inserts and the sentinel: nothing of these rows, though all four were deleted
    _assert_only(after, {*pages, sentinel}, {sentinel: ["UPSERT"]})


async def test_rows_deleted_in_their_own_transaction_are_published_once_and_gone(
    app_pool: aiomysql.Pool,
) -> None:
    u = uuid.uuid4().hex[:8]
    page, sentinel = f"dtx-{u}", f"dtx-{u}-sentinel"
    tail = Tail()
    try:
        writer = PageWriter(app_pool, delete_outbox_row=True)
        await writer.create(page, "Empty", "outbox", {})
        await writer.update(page, content="still empty")
        await writer.soft_delete(page)
        await writer.restore(page)
        await writer.hard_delete(page)
        assert await _rows_of(app_pool, [page]) == []  # the table keeps no history
        await PageWriter(app_pool).create(sentinel, "After", "the deletes", {})
        seen = await _read_past_sentinel(tail, sentinel)
    finally:
        tail.close()
    operations = ["UPSERT", "UPSERT", "TOMBSTONE", "UPSERT", "TOMBSTONE"]
    _assert_only(seen, {page, sentinel}, {page: operations, sentinel: ["UPSERT"]})
    revisions = [_header(m, "searchsync-revision") for m in seen if _key(m) == page]
    assert revisions == ["1", "2", "3", "4", "5"]


async def test_connect_reports_an_unknown_connector_as_missing() -> None:
    async with aclosing(ConnectClient(ConnectSettings(url=CONNECT_URL))) as connect:
        status = await connect.status(f"nope-{uuid.uuid4()}")
    assert status.state == MISSING and not status.running


async def test_the_command_on_the_real_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """`searchsync outbox prune --dry-run` with the default services: the consumer's MySQL user,
    the real Connect REST API; a 10-year window deletes nothing of anyone's."""
    monkeypatch.setenv("SEARCHSYNC_CONNECT_URL", CONNECT_URL)
    argv = ["outbox", "prune", "--older-than", "3650d", "--dry-run", "--json"]
    assert await asyncio.to_thread(main, argv) == ExitCode.OK
