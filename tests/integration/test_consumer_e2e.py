"""End to end on the real stack: MariaDB -> Debezium -> Kafka -> searchsync -> Elasticsearch.

Every write goes through a MariaDB transaction (the writer helper) and every event through the
real connector; at quiescence each document must equal the projection of its row.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiomysql
import orjson
import pytest
import pytest_asyncio
from confluent_kafka import Producer
from searchsync.devtools.loadgen import run_loadgen
from searchsync.dlq.replay import DlqFilter, inspect
from searchsync.dlq.scan import DlqTopic
from searchsync.events import encode_json
from searchsync.mysql.pool import transaction
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import Document, default_registry
from searchsync.search.client import make_es_client
from searchsync.types import Operation, ThinEvent
from searchsync.writer import PageWriter

from tests.fakes.avro_events import AvroFraming, encode_avro
from tests.integration.conftest import KAFKA
from tests.integration.conftest_mysql import fetch_all, recreate_ignoring_the_floor
from tests.integration.consumer_harness import (
    InProcessConsumer,
    SubprocessConsumer,
    converged,
    drop_indices,
    expected_documents,
    harness_env,
    prepare_index,
    start_group_at_end,
    wait_for,
)
from tests.integration.engines import ENGINES, opensearch_env

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPIC = "outbox.event.wiki_page"
REL = {"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character", "title": "hero"}]}


async def _floors(pool: aiomysql.Pool, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    rows = await fetch_all(
        pool,
        "SELECT aggregate_id, revision FROM search_revision_floor"
        " WHERE aggregate_type = 'wiki_page' AND aggregate_id IN ("
        + ",".join(["%s"] * len(ids))
        + ")",
        tuple(ids),
    )
    return {r["aggregate_id"]: int(r["revision"]) for r in rows}


async def _wait_converged(
    consumer_pool: aiomysql.Pool,
    settings_alias: str,
    es_settings: object,
    ids: list[str],
    deadline_s: float = 120,
) -> dict[str, Document]:
    truth = MysqlTruth(consumer_pool)
    expected = await expected_documents(truth, ids, await _floors(consumer_pool, ids))
    es = make_es_client(es_settings)  # type: ignore[arg-type]
    last = [""]
    try:

        async def check() -> bool:
            ok, why = await converged(es, settings_alias, expected)
            last[0] = why
            return ok

        try:
            await wait_for(check, deadline_s, "every document equals the projection of its row")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last difference: {last[0]}") from None
    finally:
        await es.close()
    return expected


@pytest_asyncio.fixture(loop_scope="session")
async def consumer(app_pool: aiomysql.Pool, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """The consumer on Elasticsearch; a test parametrized with ``opensearch`` gets it there."""
    engine = getattr(request, "param", "elasticsearch")
    c = InProcessConsumer(
        harness_env("e2e", **(opensearch_env() if engine == "opensearch" else {}))
    )
    await prepare_index(c.settings)
    await c.start()
    yield c
    code = await c.close()
    await drop_indices(c.settings)
    assert code == 0, f"consumer exited with {code}"


@contextlib.asynccontextmanager
async def _writes_blocked(consumer: InProcessConsumer) -> AsyncIterator[None]:
    """A write block on the consumer's index for the block's body; on leaving it, the block stays
    until the consumer has paused its intake for it (it saw a write refused)."""
    index = f"{consumer.settings.alias('wiki_page')}_v1"
    es = make_es_client(consumer.settings)
    try:
        await es.indices.put_settings(index=index, settings={"index.blocks.write": True})
        yield

        async def paused() -> bool:
            return consumer.metric("searchsync_partitions_paused") > 0

        await wait_for(paused, 60, "intake paused while the index refuses writes")
    finally:
        await es.indices.put_settings(index=index, settings={"index.blocks.write": False})
        await es.close()


@pytest.mark.parametrize("consumer", ENGINES, indirect=True)
async def test_every_kind_of_change_converges(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    w = PageWriter(app_pool)
    p = f"e2e-{uuid.uuid4().hex[:8]}"
    ids = [f"{p}-life", f"{p}-soft", f"{p}-hard", f"{p}-hot"]
    # create, update, soft delete, restore
    await w.create(ids[0], "Life", "v1", REL)
    await w.update(ids[0], title="Life 2")
    await w.soft_delete(ids[0])
    await w.restore(ids[0])
    # a soft delete that stays deleted: a tombstone document
    await w.create(ids[1], "Soft", "gone soon", {})
    await w.soft_delete(ids[1])
    # a hard delete: the row is gone, the document is a tombstone at the delete's revision
    await w.create(ids[2], "Hard", "gone", {})
    await w.update(ids[2], content="still here")
    await w.hard_delete(ids[2])
    # one hot key, many updates, written while the index refuses writes: the consumer pauses on
    # its first event, so the others wait together and coalesce however fast the writer is
    async with _writes_blocked(consumer):
        await w.create(ids[3], "Hot", "0", {})
        for i in range(60):
            await w.update(ids[3], content=str(i + 1))
    # concurrent writers over more pages
    report = await run_loadgen(
        w,
        pages=15,
        updates=150,
        concurrency=6,
        delete_ratio=0.1,
        seed=7,
        id_prefix=f"{p}-lg",
        hard_delete_ratio=0.05,
    )
    ids += sorted(report.final_revisions)

    expected = await _wait_converged(
        consumer_pool, consumer.settings.alias("wiki_page"), consumer.settings, ids
    )
    assert expected[ids[0]].source_revision == 4 and not expected[ids[0]].is_deleted
    assert expected[ids[1]].is_deleted and expected[ids[2]].is_deleted
    assert expected[ids[2]].source_revision == 3
    assert expected[ids[3]].source_revision == 61
    # coalescing: 61 events of the hot key did not cost 61 writes
    applied = consumer.metric(
        "searchsync_event_outcomes_total", aggregate_type="wiki_page", result="applied"
    )
    superseded = consumer.metric(
        "searchsync_event_outcomes_total", aggregate_type="wiki_page", result="superseded"
    )
    assert superseded > 0
    assert applied + superseded > 0
    assert consumer.metric("outbox_dead_total") == 0


async def test_replay_and_reordering_never_move_a_document_backwards(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    w = PageWriter(app_pool)
    page = f"e2e-rp-{uuid.uuid4().hex[:8]}"
    await w.create(page, "Replay", "0", {})
    for i in range(9):
        await w.update(page, content=str(i + 1))
    await _wait_converged(
        consumer_pool, consumer.settings.alias("wiki_page"), consumer.settings, [page]
    )

    # replay: the page's old events again, duplicated and shuffled, straight into the topic
    events = [
        ThinEvent(str(uuid.uuid4()), "wiki_page", page, Operation.UPSERT, r) for r in range(1, 11)
    ] * 2
    random.Random(3).shuffle(events)
    producer = Producer({"bootstrap.servers": KAFKA})
    for ev in events:
        producer.produce(TOPIC, key=page.encode(), value=encode_json(ev))
    assert producer.flush(30) == 0

    es = make_es_client(consumer.settings)
    alias = consumer.settings.alias("wiki_page")
    seen_versions: list[int] = []
    try:

        async def replayed() -> bool:
            doc = await es.get(index=alias, id=page)
            seen_versions.append(doc["_version"])
            done = consumer.metric(
                "searchsync_event_outcomes_total",
                aggregate_type="wiki_page",
                result="already_applied",
            ) + consumer.metric(
                "searchsync_event_outcomes_total", aggregate_type="wiki_page", result="superseded"
            )
            return done >= 20

        await wait_for(replayed, 60, "the 20 replayed events were finished")
    finally:
        await es.close()
    assert seen_versions and all(v == 10 for v in seen_versions), seen_versions
    await _wait_converged(consumer_pool, alias, consumer.settings, [page])


async def test_revision_regression_is_surfaced_not_hidden(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    w = PageWriter(app_pool)
    page = f"e2e-rr-{uuid.uuid4().hex[:8]}"
    await w.create(page, "Regress", "1", {})
    await w.update(page, content="2")
    await w.hard_delete(page)  # revision 3, tombstone v3
    alias = consumer.settings.alias("wiki_page")
    await _wait_converged(consumer_pool, alias, consumer.settings, [page])
    # an application that re-creates the id without the revision floor restarts it at 1
    assert await recreate_ignoring_the_floor(app_pool, page, "Again", "new life") == 1

    async def surfaced() -> bool:
        return (
            consumer.metric("searchsync_revision_regression_total", aggregate_type="wiki_page") >= 1
        )

    await wait_for(surfaced, 60, "the revision regression was counted")
    mine: list = []  # type: ignore[type-arg]

    async def dead_lettered() -> bool:
        records = await asyncio.to_thread(
            inspect,
            DlqTopic(consumer.settings.kafka.client_config(), consumer.settings.kafka.dlq_topic),
            limit=10,
            from_beginning=True,
            selection=DlqFilter(aggregate_id=page),  # the shared topic's other failures come too
        )
        mine[:] = [e.record for e in records if e.record.aggregate_id == page]
        return bool(mine)

    await wait_for(dead_lettered, 60, "the regression reached the DLQ")
    # Delivery is at least once (Debezium and a rebalance may each hand the event over twice), so
    # the one regressed event may be dead-lettered more than once; never another event or code.
    assert {r.last_error_code for r in mine} == {"REVISION_REGRESSION"}, mine
    assert len({r.event_id for r in mine}) == 1, mine
    assert all(r.original_topic == TOPIC and r.source_revision == 1 for r in mine), mine
    # the index was not silently "already applied": it still holds the tombstone, and the
    # regression is visible in the DLQ and the metric for an operator to repair
    es = make_es_client(consumer.settings)
    try:
        doc = await es.get(index=alias, id=page)
    finally:
        await es.close()
    assert doc["_version"] == 3 and doc["_source"]["is_deleted"] is True


async def test_poison_message_goes_to_the_dlq_and_the_group_keeps_going(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    producer = Producer({"bootstrap.servers": KAFKA})
    delivered: list[tuple[int, int]] = []
    key = f"poison-{uuid.uuid4().hex[:8]}".encode()
    producer.produce(
        TOPIC,
        key=key,
        value=b"{not json",
        on_delivery=lambda err, msg: delivered.append((msg.partition(), msg.offset())),
    )
    lagging = ThinEvent(str(uuid.uuid4()), "wiki_page", key.decode(), Operation.UPSERT, 99)
    producer.produce(TOPIC, key=key, value=encode_json(lagging))  # a row that never exists
    assert producer.flush(30) == 0
    w = PageWriter(app_pool)
    page = f"e2e-after-poison-{uuid.uuid4().hex[:8]}"
    await w.create(page, "After", "poison", {})
    await _wait_converged(
        consumer_pool, consumer.settings.alias("wiki_page"), consumer.settings, [page]
    )

    async def dead_lettered() -> list:  # type: ignore[type-arg]
        return await asyncio.to_thread(
            inspect,
            DlqTopic(consumer.settings.kafka.client_config(), consumer.settings.kafka.dlq_topic),
            limit=10_000,  # every dead letter of this consumer, not only the first few
            from_beginning=True,
        )

    records: list = []  # type: ignore[type-arg]

    async def got() -> bool:
        records[:] = await dead_lettered()
        return any(e.record.original_key == key for e in records)

    await wait_for(got, 60, "the poison message reached the DLQ")
    (rec,) = [
        e.record
        for e in records
        if e.record.original_key == key and e.record.last_error_code == "BAD_JSON"
    ]
    assert (rec.original_partition, rec.original_offset) == delivered[0]
    assert rec.original_topic == TOPIC and rec.payload == b"{not json"
    # the event for a row that does not exist became a tombstone at its revision: not lost
    es = make_es_client(consumer.settings)
    try:
        doc = await es.get(index=consumer.settings.alias("wiki_page"), id=key.decode())
    finally:
        await es.close()
    assert doc["_version"] == 99 and doc["_source"]["is_deleted"] is True


async def test_kill_9_mid_batch_then_restart_loses_nothing(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, tmp_path: Path
) -> None:
    # small consume batches, so a backlog takes many batches and the kill lands mid-stream
    # two keys in flight at a time: the backlog takes many small batches, so the kill lands
    # mid-stream with work consumed, written and not yet committed
    env = harness_env(
        "kill",
        SEARCHSYNC_PIPELINE_COMMIT_INTERVAL_S="0.2",
        SEARCHSYNC_KAFKA_POLL_BATCH_SIZE="10",
        SEARCHSYNC_PIPELINE_MAX_IN_FLIGHT_KEYS="2",
    )
    settings = InProcessConsumer(env).settings
    await prepare_index(settings)
    alias = settings.alias("wiki_page")
    start_group_at_end(settings)
    w = PageWriter(app_pool)
    report = await run_loadgen(
        w,
        pages=150,
        updates=300,
        concurrency=6,
        delete_ratio=0.05,
        seed=11,
        id_prefix=f"e2e-k9-{uuid.uuid4().hex[:8]}",
    )
    ids = sorted(report.final_revisions)
    proc = SubprocessConsumer(env, tmp_path / "consumer.log")
    proc.start()
    es = make_es_client(settings)
    try:

        async def indexed() -> int:  # realtime: no refresh needed
            docs = (await es.mget(index=alias, ids=ids))["docs"]
            return sum(1 for d in docs if d.get("found"))

        async def some_indexed() -> bool:
            try:
                return await indexed() >= 5
            except Exception:
                return False

        await wait_for(some_indexed, 90, "the first consumer indexed something", interval=0.01)
        proc.kill9()
        indexed_at_kill = await indexed()
    finally:
        await es.close()
        if proc.proc is not None and proc.proc.poll() is None:
            proc.kill9()
    assert indexed_at_kill < len(ids), "the kill came too late to be mid-stream"

    proc2 = SubprocessConsumer(env, tmp_path / "consumer2.log")
    proc2.start()
    try:
        await _wait_converged(consumer_pool, alias, settings, ids, deadline_s=180)

        async def running() -> bool:
            return "searchsync running" in (tmp_path / "consumer2.log").read_text()

        await wait_for(running, 30, "the second consumer logged that it runs")
    finally:
        code = proc2.terminate()
        await drop_indices(settings)
    assert code == 0, (tmp_path / "consumer2.log").read_text()[-3000:]


async def test_projection_is_the_same_as_the_rebuild_would_make(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    """Invariant 6 across the service boundary: the stored body is byte-for-byte the projector's."""
    w = PageWriter(app_pool)
    page = f"e2e-proj-{uuid.uuid4().hex[:8]}"
    await w.create(
        page,
        "Ünïcode title",
        "content",
        {**REL, "RELATED_PLACE": [{"entity_id": "p9", "entity_type": "place"}]},
    )
    expected = await _wait_converged(
        consumer_pool, consumer.settings.alias("wiki_page"), consumer.settings, [page]
    )
    doc = expected[page]
    projector = default_registry().get("wiki_page")
    assert doc.body["projection_hash"] == doc.projection_hash
    assert doc.body["projection_schema_version"] == projector.schema_version
    assert orjson.loads(doc.encoded) == doc.body


async def test_a_blocked_index_pauses_intake_and_dead_letters_nothing(
    consumer: InProcessConsumer, app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool
) -> None:
    """An Elasticsearch that refuses writes (here a write block on the index, as a full disk
    would) is backpressure: partitions pause, nothing is dead-lettered, and it heals."""
    alias = consumer.settings.alias("wiki_page")
    index = f"{alias}_v1"
    es = make_es_client(consumer.settings)
    w = PageWriter(app_pool)
    prefix = f"e2e-blk-{uuid.uuid4().hex[:8]}"
    try:
        await es.indices.put_settings(index=index, settings={"index.blocks.write": True})
        for i in range(5):
            await w.create(f"{prefix}-{i}", "Blocked", str(i), {})

        async def paused() -> bool:
            return consumer.metric("searchsync_partitions_paused") > 0

        await wait_for(paused, 60, "intake paused while the index refuses writes")
        assert consumer.metric("outbox_dead_total") == 0
        retried = consumer.metric(
            "outbox_retry_total", aggregate_type="wiki_page", code="ES_BLOCKED"
        )
        assert retried > 0
    finally:
        await es.indices.put_settings(index=index, settings={"index.blocks.write": False})
        await es.close()
    await _wait_converged(
        consumer_pool, alias, consumer.settings, [f"{prefix}-{i}" for i in range(5)]
    )

    async def resumed() -> bool:
        return consumer.metric("searchsync_partitions_paused") == 0

    await wait_for(resumed, 30, "intake resumed once writes succeed")
    assert consumer.metric("outbox_dead_total") == 0


@pytest.mark.parametrize("framing", [AvroFraming.CONFLUENT, AvroFraming.SINGLE_OBJECT])
async def test_avro_events_are_accepted(
    consumer: InProcessConsumer,
    app_pool: aiomysql.Pool,
    consumer_pool: aiomysql.Pool,
    framing: AvroFraming,
) -> None:
    """A row written without an outbox row is only announced by the Avro event produced here."""
    page = f"e2e-avro-{uuid.uuid4().hex[:8]}"
    async with transaction(app_pool) as conn, conn.cursor() as cur:
        await cur.execute(
            "INSERT INTO wiki_page (id, title, content, relations_json, revision, updated_at)"
            " VALUES (%s, 'Avro', 'framed', '{}', 3, UTC_TIMESTAMP(6))",
            (page,),
        )
    event = ThinEvent(str(uuid.uuid4()), "wiki_page", page, Operation.UPSERT, 3)
    producer = Producer({"bootstrap.servers": KAFKA})
    producer.produce(TOPIC, key=page.encode(), value=encode_avro(event, framing))
    assert producer.flush(30) == 0
    expected = await _wait_converged(
        consumer_pool, consumer.settings.alias("wiki_page"), consumer.settings, [page]
    )
    assert expected[page].source_revision == 3
