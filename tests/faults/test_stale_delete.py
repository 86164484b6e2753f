"""The stale-delete target of the fault suite: a page deleted in MySQL (soft and hard) stays
deleted when stale UPSERT events for it are replayed after Elasticsearch has forgotten deleted
versions: once `index.gc_deletes` (1 s on the test's index) has passed, and once more after an
Elasticsearch restart (which forgets them all). A tombstone is a document, so its version
survives both, and the consumer re-reads the truth instead of writing what the event says.

The restart variant is marked ``restarts``: it runs under `make faults`, never inside
`make test` (tests/faults/conftest.py)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiomysql
import pytest
import pytest_asyncio
from confluent_kafka import Producer
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.faults.services import Stack
from tests.integration.conftest import KAFKA
from tests.integration.consumer_harness import (
    InProcessConsumer,
    drop_indices,
    forget_deletes_after_1s,
    harness_env,
    prepare_index,
    wait_deleted_versions_forgotten,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
TOPIC = "outbox.event.wiki_page"


@pytest_asyncio.fixture(loop_scope="session")
async def consumer() -> AsyncIterator[InProcessConsumer]:
    c = InProcessConsumer(harness_env("stale", SEARCHSYNC_ELASTICSEARCH_REQUEST_TIMEOUT_S="5"))
    await prepare_index(c.settings)
    await forget_deletes_after_1s(c.settings)
    await c.start()
    yield c
    code = await c.close()
    await drop_indices(c.settings)
    assert code == 0, f"consumer exited with {code}"


def _replay_stale(pages: list[str]) -> int:
    """UPSERT events at revisions 1 and 2 (both older than the deletes, revision 3)."""
    producer = Producer({"bootstrap.servers": KAFKA})
    n = 0
    for page in pages:
        for rev in (1, 2):
            event = {
                "event_id": str(uuid.uuid4()),
                "aggregate_type": "wiki_page",
                "aggregate_id": page,
                "operation": "UPSERT",
                "source_revision": rev,
            }
            producer.produce(TOPIC, key=page.encode(), value=json.dumps(event).encode())
            n += 1
    assert producer.flush(30) == 0
    return n


async def _stays_deleted(c: InProcessConsumer, app_pool: aiomysql.Pool, restart: bool) -> None:
    alias = c.settings.alias("wiki_page")
    u = uuid.uuid4().hex[:8]
    soft, hard = f"stale-{u}-soft", f"stale-{u}-hard"
    w = PageWriter(app_pool)
    for page in (soft, hard):
        await w.create(page, "Stale", "v1", {})
        await w.update(page, content="v2")
    await w.soft_delete(soft)  # revision 3, the row stays
    await w.hard_delete(hard)  # revision 3, the row is gone
    es = make_es_client(c.settings)
    try:

        async def tombstones() -> bool:
            docs = (await es.mget(index=alias, ids=[soft, hard]))["docs"]
            return all(d.get("found") and d["_version"] == 3 and d["_source"]["is_deleted"]
                       for d in docs)  # fmt: skip

        await wait_for(tombstones, 120, "both pages are tombstones at revision 3")
        await wait_deleted_versions_forgotten(es, alias)
        if restart:
            await asyncio.to_thread(Stack.from_env().restart, "elasticsearch", Path("/dev/null"))
        before = _finished(c)
        sent = await asyncio.to_thread(_replay_stale, [soft, hard])

        async def replayed() -> bool:
            return _finished(c) - before >= sent

        await wait_for(replayed, 180, f"the {sent} stale events were finished")
        for doc in (await es.mget(index=alias, ids=[soft, hard]))["docs"]:
            assert doc["_version"] == 3 and doc["_source"]["is_deleted"] is True, doc
    finally:
        await es.close()
    assert c.metric("outbox_dead_total") == 0


def _finished(c: InProcessConsumer) -> float:
    return sum(
        c.metric("searchsync_event_outcomes_total", aggregate_type="wiki_page", result=r)
        for r in ("applied", "already_applied", "superseded")
    )


async def test_a_deleted_page_stays_deleted_after_gc_deletes(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool
) -> None:
    await _stays_deleted(consumer, app_pool, restart=False)


@pytest.mark.restarts
async def test_a_deleted_page_stays_deleted_after_an_elasticsearch_restart(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool
) -> None:
    await _stays_deleted(consumer, app_pool, restart=True)
