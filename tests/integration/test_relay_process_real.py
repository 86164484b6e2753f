"""`searchsync relay run` as a real process: it serves the relay's metrics, stops cleanly on
SIGTERM, and a relay killed with SIGKILL while it holds a claim loses nothing: another relay
takes the claim back after the timeout and publishes the rows."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace

import aiomysql
import pytest
from searchsync.config import RelaySettings
from searchsync.kafka.producer import AcknowledgedProducer
from searchsync.relay.mysql_store import MysqlRelayStore
from searchsync.relay.port import PARTITIONER
from searchsync.relay.relay import RELAY_METRIC_NAMES, Relay

from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import fetch_all
from tests.integration.kafkatools import TopicTail
from tests.integration.relay_scratch import *  # noqa: F403  (the scratch_outbox fixture)
from tests.integration.relay_scratch import insert_rows
from tests.timing import deadline as deadline_after

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

DEADLINE_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_relay(table: str, topic: str, **env: str) -> subprocess.Popen[bytes]:
    variables = {
        **os.environ,
        "SEARCHSYNC_RELAY_TABLE": table,
        "SEARCHSYNC_RELAY_TOPIC_TEMPLATE": topic.replace("wiki_page", "{type}"),
        "SEARCHSYNC_RELAY_POLL_INTERVAL_S": "0.05",
        "SEARCHSYNC_RELAY_STATS_INTERVAL_S": "0.2",
        **env,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "searchsync", "relay", "run"],
        env=variables,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def rows_of(pool: aiomysql.Pool, table: str) -> list[dict[str, object]]:
    return await fetch_all(pool, f"SELECT status, attempts, locked_by FROM `{table}`", ())


async def until(
    pool: aiomysql.Pool, table: str, check: Callable[[list[dict[str, object]]], bool], what: str
) -> None:
    deadline = deadline_after(DEADLINE_S)
    while time.monotonic() < deadline:
        if check(await rows_of(pool, table)):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"not within {DEADLINE_S}s: {what}")


def metrics_text(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
        return str(r.read().decode())


async def test_relay_run_publishes_serves_metrics_and_stops_on_sigterm(
    consumer_pool: aiomysql.Pool, scratch_outbox: str, topic: str
) -> None:
    tail = TopicTail(KAFKA, topic)
    ids = await insert_rows(consumer_pool, scratch_outbox, [f"p{i}" for i in range(20)])
    port = free_port()
    proc = start_relay(scratch_outbox, topic, SEARCHSYNC_RELAY_METRICS_PORT=str(port))
    try:
        await until(
            consumer_pool,
            scratch_outbox,
            lambda rows: all(r["status"] == "PUBLISHED" for r in rows),
            "every row PUBLISHED",
        )
        seen = tail.read_until(
            lambda ms: {dict(m.headers())["id"].decode() for m in ms} >= set(ids), DEADLINE_S
        )
        assert len(seen) >= len(ids)
        deadline = deadline_after(DEADLINE_S)
        text = ""
        while "relay_published_total 20.0" not in text and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            text = await asyncio.to_thread(metrics_text, port)
        for name in RELAY_METRIC_NAMES:
            assert name in text
        assert "relay_published_total 20.0" in text
        assert "outbox_pending_count 0.0" in text
    finally:
        tail.close()
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, stderr.decode()


async def test_a_relay_killed_mid_claim_loses_nothing(
    consumer_pool: aiomysql.Pool, scratch_outbox: str, topic: str
) -> None:
    ids = await insert_rows(consumer_pool, scratch_outbox, [f"k{i}" for i in range(10)])
    # a relay whose broker never answers: it claims the rows and waits for acknowledgements
    proc = start_relay(
        scratch_outbox,
        topic,
        SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:1",
        SEARCHSYNC_RELAY_PUBLISH_TIMEOUT_S="120",
        SEARCHSYNC_RELAY_CLAIM_TIMEOUT_S="300",
    )
    try:
        await until(
            consumer_pool,
            scratch_outbox,
            lambda rows: all(r["status"] == "PROCESSING" for r in rows),
            "the doomed relay holds every row",
        )
    finally:
        proc.kill()  # SIGKILL mid-claim
        await asyncio.to_thread(proc.wait, 30)
    holders = {r["locked_by"] for r in await rows_of(consumer_pool, scratch_outbox)}
    assert len(holders) == 1 and f":{proc.pid}:" in str(holders.pop())

    tail = TopicTail(KAFKA, topic)
    producer = AcknowledgedProducer({"bootstrap.servers": KAFKA, **PARTITIONER}, name="it-rescue")
    settings = replace(
        RelaySettings(),
        table=scratch_outbox,
        topic_template=topic.replace("wiki_page", "{type}"),
        claim_timeout_s=2.0,
        publish_timeout_s=1.0,
        poll_interval_s=0.05,
    )
    rescuer = Relay(MysqlRelayStore(consumer_pool, scratch_outbox), producer, settings, holder="r")
    stop = asyncio.Event()
    running = asyncio.create_task(rescuer.run(stop))
    try:
        await until(
            consumer_pool,
            scratch_outbox,
            lambda rows: all(r["status"] == "PUBLISHED" and r["attempts"] == 1 for r in rows),
            "the killed relay's rows taken back and PUBLISHED",
        )
        seen = tail.read_until(
            lambda ms: {dict(m.headers())["id"].decode() for m in ms} >= set(ids), DEADLINE_S
        )
        assert {dict(m.headers())["id"].decode() for m in seen} == set(ids)
    finally:
        stop.set()
        await running
        await producer.close(10.0)
        tail.close()
