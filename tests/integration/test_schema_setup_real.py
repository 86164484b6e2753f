"""docs/production.md steps 2, 3 and 5 on the real services, from nothing: a fresh database gets
the printed `searchsync schema sql`, the demo's wiki_page and the printed `searchsync schema
grants` for three fresh users; the printed `searchsync schema connector` (credentials through the
worker's FileConfigProvider) is registered on Kafka Connect for that database; a page written by
the application user reaches Kafka through it and Elasticsearch through a consumer that logs in
as the fresh consumer user.

Everything is the test's own: the database, the users, the connector (its server id, topic prefix,
schema history and outbox topics), the consumer group and index; all are removed at the end. The
stack's Connect worker is used when it declares the file provider (deploy/local/connect.sh
writes it); a worker started before it did gets a second worker of the test's own instead
(``connect.sh worker`` on a free port), so the stack's connector is never touched.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from elasticsearch import AsyncElasticsearch
from searchsync.events import decode
from searchsync.mysql.pool import create_pool
from searchsync.writer import PageWriter

from tests.integration.conftest import CONNECT_URL, ES_URL, KAFKA
from tests.integration.conftest_mysql import root_socket
from tests.integration.consumer_harness import (
    InProcessConsumer,
    harness_env,
    prepare_index,
    wait_for,
)
from tests.integration.kafkatools import TopicTail, fresh_topics, kafka_admin

pytestmark = [pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
STACK_DIR = Path(os.environ.get("STACK_DIR", str(REPO / ".stack")))
MYSQL_HOST = os.environ.get("SEARCHSYNC_MYSQL_HOST", "127.0.0.1")
MYSQL_PORT = int(os.environ.get("SEARCHSYNC_MYSQL_PORT", "3306"))
DEADLINE_S = 120.0
FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"


@dataclass(frozen=True, slots=True)
class Fresh:
    tag: str
    database: str
    consumer: str
    app: str
    debezium: str
    password: str


def _cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "searchsync", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _mariadb(sql: str, *, database: str | None = None, login: tuple[str, str] | None = None) -> int:
    """Run `sql` as root over the socket, or as `login` (user, password) over TCP; its exit code."""
    if login is None:
        how = [f"--socket={root_socket()}", "-uroot"]
    else:
        how = [f"-h{MYSQL_HOST}", f"-P{MYSQL_PORT}", f"-u{login[0]}", f"-p{login[1]}"]
    done = subprocess.run(
        ["mariadb", *how, *([database] if database else [])],
        input=sql,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode


@pytest.fixture
def fresh() -> Iterator[Fresh]:
    tag = uuid.uuid4().hex[:8]
    f = Fresh(
        f"fs{tag}", f"it_fs_{tag}", f"c_fs{tag}", f"a_fs{tag}", f"d_fs{tag}", uuid.uuid4().hex
    )
    accounts = [f"'{u}'@'%'" for u in (f.consumer, f.app, f.debezium)]
    create = "".join(f"CREATE USER {a} IDENTIFIED BY '{f.password}';" for a in accounts)
    assert _mariadb(f"CREATE DATABASE `{f.database}`;{create}") == 0
    try:
        yield f
    finally:
        _mariadb(f"DROP USER IF EXISTS {', '.join(accounts)}; DROP DATABASE `{f.database}`;")


def _request(method: str, url: str, body: object | None = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _connect_worker(tmp_path: Path, tag: str) -> Iterator[str]:
    """The stack's Connect when its worker declares the file provider; else a worker of the
    test's own (stopped, and its storage topics deleted, at the end)."""
    props = STACK_DIR / "connect" / "worker.properties"
    if props.exists() and FILE_PROVIDER in props.read_text():
        yield CONNECT_URL
        return
    port, group = _free_port(), f"it-{tag}-connect"
    env = {
        **os.environ,
        "STACK_DIR": str(tmp_path / "stack"),
        "SVC_DIR": str(tmp_path / "stack"),
        "DIST_DIR": str(STACK_DIR / "dist"),
        "CONNECT_PORT": str(port),
        "CONNECT_GROUP_ID": group,
        "CONNECT_HEAP": "512m",
        "CLI_BIN": str(Path(sys.executable).parent / "searchsync"),
    }
    script = str(REPO / "deploy" / "local" / "connect.sh")
    try:
        started = subprocess.run(["bash", script, "worker"], env=env, timeout=300, check=False)
        assert started.returncode == 0, "a Connect worker of the test's own did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=120, check=False)
        _delete_topics([f"{group}-{kind}" for kind in ("configs", "offsets", "status")])


def _delete_topics(names: list[str]) -> None:
    """Delete `names` and wait for the answer (a topic never created is fine)."""
    admin = AdminClient({"bootstrap.servers": KAFKA})  # alive until every answer is in
    futures = admin.delete_topics(names, operation_timeout=20)
    for future in futures.values():
        try:
            future.result(timeout=30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise


def _running(url: str, name: str) -> bool:
    code, status = _request("GET", f"{url}/connectors/{name}/status")
    if code != 200 or not isinstance(status, dict):
        return False
    tasks = status.get("tasks", [])
    failed = [t.get("trace", "")[:1500] for t in tasks if t["state"] == "FAILED"]
    assert not failed, f"connector task FAILED: {failed[0]}"
    return bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)


def _poll(check: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {DEADLINE_S}s waiting for: {what}")


async def test_a_fresh_database_set_up_from_the_printed_schema_runs_events_to_search(
    fresh: Fresh, tmp_path: Path
) -> None:
    # 2. the tables and users
    assert _mariadb(_cli("schema", "sql"), database=fresh.database) == 0
    demo = (REPO / "schemas" / "sql" / "demo" / "wiki_page.sql").read_text(encoding="utf-8")
    assert _mariadb(demo, database=fresh.database) == 0
    grants = _cli(
        "schema",
        "grants",
        "--database",
        fresh.database,
        "--consumer-user",
        fresh.consumer,
        "--app-user",
        fresh.app,
        "--debezium-user",
        fresh.debezium,
        "--table",
        "wiki_page",
    )
    assert _mariadb(grants) == 0

    # 3. the connector: its credentials in a file the worker reads, never in its config
    secrets = tmp_path / "debezium.properties"
    secrets.write_text(f"user={fresh.debezium}\npassword={fresh.password}\n")
    topic, history = f"it-{fresh.tag}.wiki_page", f"it-{fresh.tag}.schema-history"
    config = json.loads(
        _cli(
            "schema",
            "connector",
            "--database",
            fresh.database,
            "--server-id",
            str(random.randint(1_000_000, 4_000_000_000)),
            "--topic-prefix",
            f"it-{fresh.tag}",
            "--schema-history-topic",
            history,
            "--topic-template",
            f"it-{fresh.tag}.{{type}}",
            "--secrets",
            str(secrets),
        )
    )
    assert fresh.password not in json.dumps(config)
    name = f"it-{fresh.tag}-outbox"
    with fresh_topics(KAFKA, [(topic, 3)]), _connect_worker(tmp_path, fresh.tag) as url:
        try:
            code, answer = _request("PUT", f"{url}/connectors/{name}/config", config)
            assert code in (200, 201), answer
            _poll(lambda: _running(url, name), f"connector {name} RUNNING")
            # the snapshot has taken its binlog position once the schema history has a record
            _poll(
                lambda: sum(m.high for m in kafka_admin(KAFKA).watermarks(history).values()) > 0,
                "the connector's schema history",
            )
            await _events_reach_kafka_and_search(fresh, topic)
        finally:
            _request("DELETE", f"{url}/connectors/{name}")
            _delete_topics([history])


async def _events_reach_kafka_and_search(fresh: Fresh, topic: str) -> None:
    # the consumer's user reads wiki_page and may not write it
    consumer_login = (fresh.consumer, fresh.password)
    assert _mariadb("SELECT id FROM wiki_page", database=fresh.database, login=consumer_login) == 0
    refused = _mariadb("DELETE FROM wiki_page", database=fresh.database, login=consumer_login)
    assert refused != 0
    env = harness_env(
        "fs",
        SEARCHSYNC_MYSQL_DATABASE=fresh.database,
        SEARCHSYNC_MYSQL_USER=fresh.consumer,
        SEARCHSYNC_MYSQL_PASSWORD=fresh.password,
        SEARCHSYNC_KAFKA_TOPICS=topic,
    )
    consumer = InProcessConsumer(env)
    await prepare_index(consumer.settings)
    tail = TopicTail(KAFKA, topic)
    await consumer.start()
    app = await create_pool(
        host=MYSQL_HOST,
        port=MYSQL_PORT,
        user=fresh.app,
        password=fresh.password,
        database=fresh.database,
        minsize=1,
        maxsize=2,
    )
    es = AsyncElasticsearch(ES_URL)
    alias = consumer.settings.alias("wiki_page")
    try:
        page = f"{fresh.tag}-页面"
        writer = PageWriter(app)
        await writer.create(page, "生产清单", "从零开始", {})
        revision = await writer.update(page, title="生产清单 v2")

        def ours(ms: list[object]) -> bool:
            return sum(m.key() == page.encode() for m in ms) >= 2  # type: ignore[attr-defined]

        records = [m for m in tail.read_until(ours, DEADLINE_S) if m.key() == page.encode()]
        events = [decode(m.value(), max_bytes=1 << 20, known_types=["wiki_page"]) for m in records]
        assert [(e.aggregate_id, e.source_revision) for e in events] == [(page, 1), (page, 2)]

        async def indexed() -> bool:
            found = await es.options(ignore_status=404).get(index=alias, id=page)
            return bool(found.get("found")) and found["_version"] == revision

        await wait_for(indexed, DEADLINE_S, f"{page} at revision {revision} in {alias}")
        doc = await es.get(index=alias, id=page)
        assert doc["_source"]["title"] == "生产清单 v2"
    finally:
        tail.close()
        app.close()
        await app.wait_closed()
        assert await consumer.close() == 0
        await es.options(ignore_status=404).indices.delete(index=f"{alias}_v1")
        await es.close()
        _delete_topics([consumer.settings.kafka.dlq_topic])
