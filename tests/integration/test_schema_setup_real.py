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
import subprocess
import sys
from pathlib import Path

import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.events import decode
from searchsync.mysql.pool import create_pool
from searchsync.writer import PageWriter

from tests.integration.conftest import ES_URL, KAFKA
from tests.integration.consumer_harness import (
    InProcessConsumer,
    harness_env,
    prepare_index,
    wait_for,
)
from tests.integration.fresh_setup import (
    DEADLINE_S,
    MYSQL_HOST,
    MYSQL_PORT,
    REPO,
    STACK_DIR,
    Fresh,
    cli,
    connect_worker,
    delete_topics,
    mariadb,
    poll,
    request,
    running,
)
from tests.integration.fresh_setup import fresh as fresh  # the fixture
from tests.integration.kafkatools import TopicTail, fresh_topics, kafka_admin

pytestmark = [pytest.mark.integration]


async def test_a_fresh_database_set_up_from_the_printed_schema_runs_events_to_search(
    fresh: Fresh, tmp_path: Path
) -> None:
    # 2. the tables and users
    assert mariadb(cli("schema", "sql"), database=fresh.database) == 0
    demo = (REPO / "schemas" / "sql" / "demo" / "wiki_page.sql").read_text(encoding="utf-8")
    assert mariadb(demo, database=fresh.database) == 0
    grants = cli(
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
    assert mariadb(grants) == 0

    # 3. the connector: its credentials in a file the worker reads, never in its config
    secrets = tmp_path / "debezium.properties"
    secrets.write_text(f"user={fresh.debezium}\npassword={fresh.password}\n")
    topic, history = f"it-{fresh.tag}.wiki_page", f"it-{fresh.tag}.schema-history"
    config = json.loads(
        cli(
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
    with fresh_topics(KAFKA, [(topic, 3)]), connect_worker(tmp_path, fresh.tag) as url:
        try:
            code, answer = request("PUT", f"{url}/connectors/{name}/config", config)
            assert code in (200, 201), answer
            poll(lambda: running(url, name), f"connector {name} RUNNING")
            # the snapshot has taken its binlog position once the schema history has a record
            poll(
                lambda: sum(m.high for m in kafka_admin(KAFKA).watermarks(history).values()) > 0,
                "the connector's schema history",
            )
            await _events_reach_kafka_and_search(fresh, topic)
        finally:
            request("DELETE", f"{url}/connectors/{name}")
            delete_topics([history, f"__debezium-heartbeat.it-{fresh.tag}"])


async def _events_reach_kafka_and_search(fresh: Fresh, topic: str) -> None:
    # the consumer's user reads wiki_page and may not write it
    consumer_login = (fresh.consumer, fresh.password)
    assert mariadb("SELECT id FROM wiki_page", database=fresh.database, login=consumer_login) == 0
    refused = mariadb("DELETE FROM wiki_page", database=fresh.database, login=consumer_login)
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
        delete_topics([consumer.settings.kafka.dlq_topic])


def test_the_local_stack_migration_applies_the_printed_grants(fresh: Fresh) -> None:
    """deploy/local/migrate.sh on a fresh database: the own, demo and example tables, with the
    grants of `searchsync schema grants`: the consumer reads the business tables and cannot
    write them, the application writes them and cannot touch the consumer's ledgers."""
    env = {
        **os.environ,
        "STACK_DIR": str(STACK_DIR),
        "MYSQL_DATABASE": fresh.database,
        "STACK_DB_USER": fresh.consumer,
        "APP_DB_USER": fresh.app,
        "DEBEZIUM_DB_USER": fresh.debezium,
        "STACK_DB_PASSWORD": fresh.password,
        "APP_DB_PASSWORD": fresh.password,
        "DEBEZIUM_DB_PASSWORD": fresh.password,
        "CLI_BIN": str(Path(sys.executable).parent / "searchsync"),
    }
    script = str(REPO / "deploy" / "local" / "migrate.sh")
    assert subprocess.run(["bash", script], env=env, timeout=180, check=False).returncode == 0
    login = (fresh.consumer, fresh.password)
    assert mariadb("SELECT id FROM wiki_page", database=fresh.database, login=login) == 0
    assert mariadb("SELECT id FROM article", database=fresh.database, login=login) == 0
    for table in ("article_tag", "author"):  # every table the example's file creates
        assert mariadb(f"SELECT 1 FROM {table}", database=fresh.database, login=login) == 0
    assert mariadb("DELETE FROM wiki_page", database=fresh.database, login=login) != 0
    app = (fresh.app, fresh.password)
    assert mariadb("DELETE FROM article", database=fresh.database, login=app) == 0
    assert mariadb("DELETE FROM search_dlq_replay", database=fresh.database, login=app) != 0
