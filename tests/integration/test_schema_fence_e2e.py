"""The schema fence on the real stack (docs/design.md, invariant 11, "Schema fence"), on both
search engines.

A consumer indexes into ``<alias>_v1``. The test creates ``<alias>_v2`` whose
``_meta.projection_schema_version`` is the consumer's projector's + 1 and swaps the alias to it,
as a rebuild that changed the schema would. The consumer must fence itself: write none of the
pages written afterwards into v2 and commit none of their offsets. A rollback (the alias swapped
back to v1) lifts the fence, and the consumer catches up: every page converges in v1.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import aiomysql
import pytest
from confluent_kafka import Message
from elasticsearch import NotFoundError
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import default_registry
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.writer import PageWriter

from tests.integration.conftest import KAFKA
from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    drop_indices,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)
from tests.integration.engines import ENGINES, opensearch_env
from tests.integration.kafkatools import TopicTail, kafka_admin

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPIC = "outbox.event.wiki_page"
WATCH_S = 4.0  # how long the fenced consumer is watched doing nothing (8 fence checks)


async def _events_of(tail: TopicTail, ids: list[str]) -> list[Message]:
    """Read the topic (in a thread: the consumer runs on this loop) until every id was seen."""

    def seen(messages: list[Message]) -> bool:
        values = [m.value() or b"" for m in messages]
        return all(any(i.encode() in v for v in values) for i in ids)

    messages = await asyncio.to_thread(tail.read_until, seen, 120)
    return [m for m in messages if any(i.encode() in (m.value() or b"") for i in ids)]


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_fenced_consumer_writes_nothing_then_catches_up_after_a_rollback(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, engine: str
) -> None:
    on_engine = opensearch_env() if engine == "opensearch" else {}
    consumer = InProcessConsumer(
        harness_env("fence", SEARCHSYNC_PIPELINE_FENCE_CHECK_INTERVAL_S="0.5", **on_engine)
    )
    settings = consumer.settings
    alias = settings.alias("wiki_page")
    v1, v2 = f"{alias}_v1", f"{alias}_v2"
    projector = default_registry().get("wiki_page")
    writer = PageWriter(app_pool)
    prefix = f"fence-{uuid.uuid4().hex[:8]}"
    before = [f"{prefix}-a{i}" for i in range(4)]
    during = [f"{prefix}-b{i}" for i in range(6)]
    es = make_es_client(settings)
    admin = EsIndexAdmin(es)
    truth = MysqlTruth(consumer_pool)
    group = settings.kafka.group_id
    kafka = kafka_admin(KAFKA)
    await prepare_index(settings)
    await consumer.start()
    try:
        for page in before:
            await writer.create(page, f"title {page}", "before the swap", {})
        expected = await expected_documents(truth, before, {})
        await wait_for(
            lambda: _ok(converged(es, alias, expected)), 120, "the first pages indexed in v1"
        )
        assert consumer.metric("searchsync_schema_fenced", alias=alias) == 0
        assert consumer.metric("alias_current_physical_index", alias=alias) == 1

        # a rebuild with a new schema version swaps the alias
        meta = {"projection_schema_version": projector.schema_version + 1}
        await admin.create_index(v2, projector.mapping, meta=meta)
        await admin.swap_alias(alias, old=v1, new=v2)

        async def fenced() -> bool:
            return consumer.metric("searchsync_schema_fenced", alias=alias) == 1

        await wait_for(fenced, 60, "the consumer fenced after the swap")
        assert consumer.metric("alias_current_physical_index", alias=alias) == 2

        tail = await asyncio.to_thread(TopicTail, KAFKA, TOPIC)
        try:
            for page in during:
                await writer.create(page, f"title {page}", "after the swap", {})
            await writer.update(before[0], content="after the swap too")
            events = await _events_of(tail, [*during, before[0]])
        finally:
            tail.close()
        first: dict[int, int] = {}
        for m in events:
            p, o = int(m.partition()), int(m.offset())
            first[p] = min(first.get(p, o), o)
        partitions = [(TOPIC, p) for p in sorted(first)]

        # Fenced: watched for a while after the events are in Kafka, nothing may change.
        watch_until = time.monotonic() + WATCH_S
        while time.monotonic() < watch_until:
            assert await fenced()
            found = await es.mget(index=v2, ids=[*before, *during])
            assert not [d["_id"] for d in found["docs"] if d.get("found")], "written into v2"
            committed = await asyncio.to_thread(kafka.committed, group, partitions)
            for (_, p), offset in committed.items():
                assert offset is None or offset <= first[p], (p, offset, first[p])
            await asyncio.sleep(0.25)
        assert consumer.metric("outbox_dead_total") == 0

        # The rollback: the alias back on v1. The consumer unfences and catches up.
        await admin.swap_alias(alias, old=v2, new=v1)
        everything = [*before, *during]
        expected = await expected_documents(truth, everything, {})
        await wait_for(
            lambda: _ok(converged(es, alias, expected)), 120, "every page converged in v1"
        )
        assert consumer.metric("searchsync_schema_fenced", alias=alias) == 0
        assert consumer.metric("alias_current_physical_index", alias=alias) == 1

        async def committed_past() -> bool:
            committed = await asyncio.to_thread(kafka.committed, group, partitions)
            return all((o or 0) > first[p] for (_, p), o in committed.items())

        await wait_for(committed_past, 60, "offsets committed past the held events")
        found = await es.mget(index=v2, ids=everything)
        assert not [d["_id"] for d in found["docs"] if d.get("found")]
        diverged = [i for i, doc in expected.items() if (await _stored(es, alias, i)) != doc.body]
        assert diverged == []
        assert consumer.metric("outbox_dead_total") == 0
    finally:
        code = await consumer.close()
        await _delete(es, v2)
        await es.close()
        await drop_indices(settings)
    assert code == 0


async def _ok(check: Any) -> bool:
    ok, _ = await check
    return bool(ok)


async def _stored(es: Any, alias: str, doc_id: str) -> Any:
    doc = await es.get(index=alias, id=doc_id)
    return doc["_source"]


async def _delete(es: Any, index: str) -> None:
    with contextlib.suppress(NotFoundError):
        await es.indices.delete(index=index)
