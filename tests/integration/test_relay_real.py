"""The polling relay on the real MariaDB and Kafka: claim, publish, mark; two relays on the same
rows; a dead holder's claim taken back; DEAD after the attempt limit, listed and revived by the
CLI. Rows live in a scratch copy of the outbox (`relay_scratch`), records go to a fresh topic."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

import aiomysql
import pytest
import pytest_asyncio
from searchsync.cli import main
from searchsync.config import RelaySettings
from searchsync.kafka.producer import AcknowledgedProducer
from searchsync.relay.mysql_store import MysqlRelayStore
from searchsync.relay.port import PARTITIONER
from searchsync.relay.relay import Relay, RelayMetrics

from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import fetch_all
from tests.integration.kafkatools import TopicTail
from tests.integration.relay_scratch import *  # noqa: F403  (the scratch_outbox fixture)
from tests.integration.relay_scratch import insert_rows
from tests.timing import deadline as deadline_after

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

DEADLINE_S = 60.0


@pytest_asyncio.fixture(loop_scope="session")
async def producer() -> AsyncIterator[AcknowledgedProducer]:
    p = AcknowledgedProducer({"bootstrap.servers": KAFKA, **PARTITIONER}, name="it-relay")
    yield p
    await p.close(10.0)


def settings_for(topic: str, table: str, **kw: Any) -> RelaySettings:
    return replace(
        RelaySettings(table=table, topic_template=topic.replace("wiki_page", "{type}")), **kw
    )


async def statuses(pool: aiomysql.Pool, table: str) -> dict[str, dict[str, Any]]:
    rows = await fetch_all(
        pool, f"SELECT event_id, status, attempts, locked_by, last_error FROM `{table}`", ()
    )
    return {r["event_id"]: r for r in rows}


async def wait_for(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = deadline_after(DEADLINE_S)
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within {DEADLINE_S}s: {what}")


async def run_until(relays: list[Relay], check: Callable[[], Awaitable[bool]], what: str) -> None:
    """Run `relays` concurrently until `check()` holds (or fail at the deadline), then stop them."""
    stop = asyncio.Event()
    running = [asyncio.create_task(r.run(stop)) for r in relays]
    try:
        await wait_for(check, what)
    finally:
        stop.set()
        await asyncio.gather(*running)


async def all_status(pool: aiomysql.Pool, table: str, status: str) -> bool:
    return all(r["status"] == status for r in (await statuses(pool, table)).values())


def event_ids(messages: list[Any]) -> list[str]:
    return [dict(m.headers())["id"].decode() for m in messages]


async def test_claim_publish_mark(
    consumer_pool: aiomysql.Pool, scratch_outbox: str, topic: str, producer: AcknowledgedProducer
) -> None:
    tail = TopicTail(KAFKA, topic)
    ids = await insert_rows(consumer_pool, scratch_outbox, [f"p{i}" for i in range(5)])
    relay = Relay(
        MysqlRelayStore(consumer_pool, scratch_outbox),
        producer,
        settings_for(topic, scratch_outbox, batch_size=3),
        holder="it-a",
    )
    first = await relay.tick()
    assert (first.claimed, first.published) == (3, 3)  # LIMIT batch_size, by id
    rows = await statuses(consumer_pool, scratch_outbox)
    assert [rows[e]["status"] for e in ids] == ["PUBLISHED"] * 3 + ["PENDING"] * 2
    assert (await relay.tick()).published == 2
    seen = tail.read_until(lambda ms: set(event_ids(ms)) >= set(ids), DEADLINE_S)
    tail.close()
    assert sorted(event_ids(seen)) == sorted(ids)
    by_id = {dict(m.headers())["id"].decode(): m for m in seen}
    assert json.loads(by_id[ids[0]].value())["aggregate_id"] == "p0"
    assert by_id[ids[0]].key() == b"p0"
    rows = await statuses(consumer_pool, scratch_outbox)
    assert all(r["status"] == "PUBLISHED" and r["locked_by"] is None for r in rows.values())


class RecordingStore(MysqlRelayStore):
    """Remembers which relay claimed which rows."""

    def __init__(self, pool: aiomysql.Pool, table: str, log: list[tuple[str, int]]) -> None:
        super().__init__(pool, table)
        self._log = log

    async def claim(self, holder: str, limit: int) -> Any:
        got = await super().claim(holder, limit)
        self._log.extend((holder, e.id) for e in got)
        return got


async def test_two_relays_at_once_never_lose_a_row(
    consumer_pool: aiomysql.Pool, scratch_outbox: str, topic: str, producer: AcknowledgedProducer
) -> None:
    tail = TopicTail(KAFKA, topic)
    ids = await insert_rows(consumer_pool, scratch_outbox, [f"k{i % 40}" for i in range(400)])
    claims: list[tuple[str, int]] = []
    settings = settings_for(topic, scratch_outbox, batch_size=20, poll_interval_s=0.05)
    relays = [
        Relay(RecordingStore(consumer_pool, scratch_outbox, claims), producer, settings, holder=h)
        for h in ("it-a", "it-b")
    ]
    await run_until(
        relays,
        lambda: all_status(consumer_pool, scratch_outbox, "PUBLISHED"),
        "every row PUBLISHED",
    )
    seen = tail.read_until(lambda ms: set(event_ids(ms)) >= set(ids), DEADLINE_S)
    tail.close()
    assert set(event_ids(seen)) == set(ids)  # none lost (duplicates would be allowed)
    claimed = [row_id for _, row_id in claims]
    assert len(claimed) == len(set(claimed)) == len(ids)  # SKIP LOCKED: no row claimed twice
    assert {h for h, _ in claims} == {"it-a", "it-b"}


async def test_a_dead_relays_claim_is_taken_back_after_the_timeout(
    consumer_pool: aiomysql.Pool, scratch_outbox: str, topic: str, producer: AcknowledgedProducer
) -> None:
    ids = await insert_rows(consumer_pool, scratch_outbox, ["a", "b"])
    store = MysqlRelayStore(consumer_pool, scratch_outbox)
    # a relay that committed its claim and died before publishing (kill -9 mid-claim)
    assert len(await store.claim("it-killed", 100)) == 2
    settings = settings_for(
        topic, scratch_outbox, claim_timeout_s=2.0, publish_timeout_s=1.0, poll_interval_s=0.05
    )
    metrics = RelayMetrics()
    relay = Relay(store, producer, settings, holder="it-alive", metrics=metrics)
    claimed_at = time.monotonic()
    assert (await relay.tick()).claimed == 0  # the claim is young: nobody else takes the rows
    rows = await statuses(consumer_pool, scratch_outbox)
    assert {r["locked_by"] for r in rows.values()} == {"it-killed"}
    await run_until(
        [relay],
        lambda: all_status(consumer_pool, scratch_outbox, "PUBLISHED"),
        "the taken-back rows PUBLISHED",
    )
    assert time.monotonic() - claimed_at >= 2.0  # not before the timeout
    rows = await statuses(consumer_pool, scratch_outbox)
    assert [rows[e]["attempts"] for e in ids] == [1, 1]  # a timed-out claim is an attempt
    assert b"outbox_claim_timeout_count_total 2.0" in metrics.render()


async def test_dead_after_the_attempt_limit_then_listed_and_revived(
    consumer_pool: aiomysql.Pool,
    scratch_outbox: str,
    topic: str,
    producer: AcknowledgedProducer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a payload the router cannot expand into a record: every publish fails
    [bad] = await insert_rows(consumer_pool, scratch_outbox, ["poison"], payload='"not an object"')
    settings = settings_for(topic, scratch_outbox, max_attempts=2, poll_interval_s=0.05)
    store = MysqlRelayStore(consumer_pool, scratch_outbox)
    relay = Relay(store, producer, settings, holder="it-a")
    assert (await relay.tick()).failed == 1
    rows = await statuses(consumer_pool, scratch_outbox)
    assert (rows[bad]["status"], rows[bad]["attempts"]) == ("PENDING", 1)
    assert "not a JSON object" in rows[bad]["last_error"]
    assert (await relay.tick()).claimed == 0  # waits out NextRetry(0), about 1 s
    await run_until(
        [relay], lambda: all_status(consumer_pool, scratch_outbox, "DEAD"), "DEAD after 2 attempts"
    )
    assert (await statuses(consumer_pool, scratch_outbox))[bad]["attempts"] == 2
    assert (await store.counts()).dead == 1

    monkeypatch.setenv("SEARCHSYNC_RELAY_TABLE", scratch_outbox)
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["relay", "dead", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["event_id"], r["attempts"]) for r in listed] == [(bad, 2)]
    row_id = listed[0]["id"]
    assert await asyncio.to_thread(main, ["relay", "revive", "--id", str(row_id)]) == 0
    assert "would revive 1" in capsys.readouterr().out
    assert (await statuses(consumer_pool, scratch_outbox))[bad]["status"] == "DEAD"  # dry run
    argv = ["relay", "revive", "--all", "--execute", "--json"]
    assert await asyncio.to_thread(main, argv) == 0
    assert json.loads(capsys.readouterr().out) == {"dry_run": False, "revived": 1}
    revived = (await statuses(consumer_pool, scratch_outbox))[bad]
    assert (revived["status"], revived["attempts"]) == ("PENDING", 0)
