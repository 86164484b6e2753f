"""A DLQ replay after fixing the cause, end to end on the real stack, with the replay ledger.

A page whose ``relations_json`` cannot be projected is dead-lettered (PROJECTION_ERROR). A replay
before the fix is dead-lettered again, and `dlq summary` says so; after the row is made projectable
(same revision, no new event: only the replay can index it) the same selection replays only the
new dead letter, the document is indexed, and a third replay is a no-op. The commands run as an
operator runs them: `searchsync` subprocesses, with the MySQL ledger (``search_dlq_replay``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiomysql
import orjson
import pytest
import pytest_asyncio
from searchsync.mysql.pool import transaction
from searchsync.mysql.truth import MysqlTruth
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    drop_indices,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

BROKEN = {"RELATED_CHARACTER": [{"entity_type": "character"}]}  # no entity_id: PROJECTION_ERROR


async def _searchsync(env: Mapping[str, str], *argv: str) -> Any:
    """Run one `searchsync ... --json` command; its JSON document (exit 0 required)."""
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "searchsync", *argv, "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, f"{argv}: {result.stderr}"
    return orjson.loads(result.stdout)


@pytest_asyncio.fixture(loop_scope="session")
async def consumer() -> AsyncIterator[InProcessConsumer]:
    c = InProcessConsumer(harness_env("dlqreplay"))
    await prepare_index(c.settings)
    await c.start()
    yield c
    code = await c.close()
    await drop_indices(c.settings)
    assert code == 0, f"consumer exited with {code}"


async def _dead_letters(env: Mapping[str, str], page: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = await _searchsync(
        env, "dlq", "inspect", "--id", page, "--from-beginning", "--limit", "100"
    )
    return rows


async def test_replay_after_fixing_the_cause_indexes_and_a_second_replay_is_a_no_op(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    env = harness_env("unused") | {  # the consumer's group, DLQ and alias
        "SEARCHSYNC_KAFKA_GROUP_ID": consumer.settings.kafka.group_id,
        "SEARCHSYNC_KAFKA_DLQ_TOPIC": consumer.settings.kafka.dlq_topic,
        "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": consumer.settings.elasticsearch.index_prefix,
    }
    page = f"dlqreplay-{uuid.uuid4().hex[:8]}"
    revision = await PageWriter(app_pool).create(page, "Broken", "relations", BROKEN)
    seen: list[dict[str, Any]] = []

    async def dead_letters(count: int) -> bool:
        seen[:] = await _dead_letters(env, page)
        return len(seen) >= count

    await wait_for(lambda: dead_letters(1), 120, "the page was dead-lettered", interval=1.0)
    assert [(r["last_error_code"], r["source_revision"]) for r in seen] == [
        ("PROJECTION_ERROR", revision)
    ]
    assert seen[0]["replayed"] is False

    # 1. replay before the fix: dead-lettered again, and the summary says so
    first = await _searchsync(env, "dlq", "replay", "--id", page, "--execute")
    assert [r["dlq_offset"] for r in first["replayed"]] == [seen[0]["dlq_offset"]]
    await wait_for(lambda: dead_letters(2), 120, "the replay was dead-lettered again", 1.0)
    assert seen[0]["replayed"] is True and seen[1]["replayed"] is False
    origin = (
        f"{env['SEARCHSYNC_KAFKA_DLQ_TOPIC']}/{seen[0]['dlq_partition']}/{seen[0]['dlq_offset']}"
    )
    assert seen[1]["from_replay_of"] == origin
    summary = await _searchsync(env, "dlq", "summary")
    [status] = [s for s in summary["replays"] if s["aggregate_id"] == page]
    assert status["outcome"] == "dead_lettered_again"
    assert status["dead_letter"] == [seen[1]["dlq_partition"], seen[1]["dlq_offset"]]

    # 2. fix the cause without a new revision or event: only a replay can index the page
    async with transaction(app_pool) as conn, conn.cursor() as cur:
        await cur.execute("UPDATE wiki_page SET relations_json = '{}' WHERE id = %s", (page,))
    second = await _searchsync(env, "dlq", "replay", "--id", page, "--execute")
    assert [r["dlq_offset"] for r in second["replayed"]] == [seen[1]["dlq_offset"]]
    assert len(second["already_replayed"]) == 1  # the first dead letter is not sent again

    truth = MysqlTruth(consumer_pool)
    expected = await expected_documents(truth, [page], {})
    assert expected[page].source_revision == revision
    es = make_es_client(consumer.settings)
    try:

        async def indexed() -> bool:
            ok, _ = await converged(es, consumer.settings.alias("wiki_page"), expected)
            return ok

        await wait_for(indexed, 120, "the replayed page was indexed", interval=0.5)
    finally:
        await es.close()

    async def summary_says_indexed() -> bool:
        doc = await _searchsync(env, "dlq", "summary")
        outcomes = [s["outcome"] for s in doc["replays"] if s["aggregate_id"] == page]
        return outcomes == ["dead_lettered_again", "indexed"]

    await wait_for(summary_says_indexed, 60, "the summary shows the replay indexed", 1.0)

    # 3. the same selection again: nothing to do
    third = await _searchsync(env, "dlq", "replay", "--id", page, "--execute")
    assert third["nothing_new"] is True and third["replayed"] == []
    assert len(third["already_replayed"]) == 2
    assert len(await _dead_letters(env, page)) == 2  # nothing failed again
