"""The tombstone purge on the real stack (docs/design.md, "Tombstones and their purge").

- `EsIndex`'s purge reads on a real node: the point-in-time scan finds exactly the old
  tombstones, and a document written between the scan and the delete is kept (``if_seq_no``
  answers 409).
- Late events: pages soft- and hard-deleted through MariaDB, indexed by a running consumer,
  purged with a tiny window (allowed by ``[retention] min_tombstone_age`` in the test's own
  settings) on an index whose ``index.gc_deletes`` is 1 s; once Elasticsearch has forgotten
  deleted versions, stale UPSERT events are replayed into the outbox topic: both documents come
  back as tombstones at the truth's revision, never live.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiomysql
import orjson
import pytest
import pytest_asyncio
from confluent_kafka import Producer
from elasticsearch import AsyncElasticsearch, NotFoundError
from searchsync.cli import main
from searchsync.events import encode_json
from searchsync.exit_codes import ExitCode
from searchsync.mysql.truth import MysqlTruth
from searchsync.naming import physical_name
from searchsync.ops.retention import purge_tombstones
from searchsync.projection import format_timestamp, wiki_page
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import EsIndex
from searchsync.search.sink import FINISHED_KINDS, IndexOp, Sink
from searchsync.search.tombstones import DeleteResult
from searchsync.types import Operation, ThinEvent
from searchsync.writer import PageWriter

from tests.integration.conftest import ES_URL, KAFKA
from tests.integration.consumer_harness import (
    InProcessConsumer,
    converged,
    drop_indices,
    expected_documents,
    forget_deletes_after_1s,
    harness_env,
    prepare_index,
    wait_deleted_versions_forgotten,
    wait_for,
)
from tests.integration.engines import ENGINES, engine_client

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

TOPIC = "outbox.event.wiki_page"
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


@pytest_asyncio.fixture(loop_scope="session", params=ENGINES)
async def es(request: pytest.FixtureRequest) -> AsyncIterator[AsyncElasticsearch]:
    client = engine_client(request.param, ES_URL)
    try:
        yield client
    finally:
        await client.close()


async def test_the_scan_finds_old_tombstones_and_a_changed_one_is_kept(
    es: AsyncElasticsearch,
) -> None:
    alias = f"itpurge{uuid.uuid4().hex[:10]}_wiki_page"
    projector = wiki_page.projector()
    await init_index(es, alias, projector.mapping, schema_version=projector.schema_version)
    index = physical_name(alias, 1)
    try:
        docs = [projector.tombstone(f"old{i}", 2, at=LONG_AGO) for i in range(5)]
        docs.append(projector.tombstone("young", 2))  # tombstoned now
        live = {
            "id": "live",
            "title": "t",
            "content": "c",
            "relations_json": "{}",
            "revision": 1,
            "deleted_at": None,
        }
        docs.append(projector.project(live))
        outcomes = await Sink(EsIndex(es)).write([IndexOp.from_document(alias, d) for d in docs])
        assert all(o.kind in FINISHED_KINDS for o in outcomes)
        await es.indices.refresh(index=index)

        store = EsIndex(es, require_alias=False)
        assert await store.maps_tombstoned_at(index)
        before = format_timestamp(datetime.now(UTC) - timedelta(days=1))
        pages = [page async for page in store.scan_tombstones(index, before, 2)]
        assert [len(p) for p in pages] == [2, 2, 1]  # pages of the requested size
        hits = [hit for page in pages for hit in page]
        assert sorted(h.doc_id for h in hits) == [f"old{i}" for i in range(5)]
        assert {h.tombstoned_at for h in hits} == {"2020-01-01T00:00:00.000Z"}

        # between the scan and the delete: old0 is re-created (a live write at a higher revision)
        again = projector.project({**live, "id": "old0", "revision": 3})
        [rewritten] = await Sink(EsIndex(es)).write([IndexOp.from_document(alias, again)])
        assert rewritten.kind in FINISHED_KINDS
        results = {o.hit.doc_id: o.result for o in await store.delete_tombstones(index, hits)}
        assert results.pop("old0") is DeleteResult.CHANGED
        assert set(results.values()) == {DeleteResult.DELETED}
        kept = await es.get(index=alias, id="old0")
        assert kept["_version"] == 3 and kept["_source"]["is_deleted"] is False
        for i in range(1, 5):
            with pytest.raises(NotFoundError):
                await es.get(index=alias, id=f"old{i}")
        assert (await es.get(index=alias, id="young"))["found"]
        assert (await es.get(index=alias, id="live"))["found"]
    finally:
        await es.indices.delete(index=index)


async def test_an_index_without_the_field_is_reported(es: AsyncElasticsearch) -> None:
    index = f"itpurge{uuid.uuid4().hex[:10]}_wiki_page_v1"
    mapping = wiki_page.load_mapping()
    del mapping["mappings"]["properties"]["tombstoned_at"]
    await es.indices.create(index=index, mappings=mapping["mappings"])
    try:
        assert not await EsIndex(es, require_alias=False).maps_tombstoned_at(index)
    finally:
        await es.indices.delete(index=index)


# -- late events after a purge -----------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def consumer() -> AsyncIterator[InProcessConsumer]:
    c = InProcessConsumer(harness_env("purge", SEARCHSYNC_RETENTION_MIN_TOMBSTONE_AGE="1s"))
    await prepare_index(c.settings)
    await forget_deletes_after_1s(c.settings)  # the test's own physical index
    await c.start()
    yield c
    code = await c.close()
    await drop_indices(c.settings)
    assert code == 0, f"consumer exited with {code}"


async def test_a_stale_upsert_after_a_purge_writes_a_tombstone_again(
    consumer: InProcessConsumer,
    app_pool: aiomysql.Pool,
    consumer_pool: aiomysql.Pool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = consumer.settings
    alias = settings.alias("wiki_page")
    u = uuid.uuid4().hex[:8]
    soft, hard, live = f"purge-{u}-soft", f"purge-{u}-hard", f"purge-{u}-live"
    writer = PageWriter(app_pool)
    for page in (soft, hard, live):
        await writer.create(page, "Page", "v1", {})
        await writer.update(page, content="v2")
    await writer.soft_delete(soft)  # revision 3, the row stays
    await writer.hard_delete(hard)  # revision 3, the row is gone, the floor says 3
    ids = [soft, hard, live]
    truth = MysqlTruth(consumer_pool)
    want = await expected_documents(truth, ids, {hard: 3})
    es = make_es_client(settings)
    try:

        async def indexed() -> bool:
            return (await converged(es, alias, want))[0]

        await wait_for(indexed, 120, "the three pages are indexed")
        rows = await truth.rows_by_id(wiki_page.projector(), [soft], primary=True)
        row = rows[soft]
        stored_soft = (await es.get(index=alias, id=soft))["_source"]
        assert stored_soft["tombstoned_at"] == format_timestamp(row["deleted_at"])
        assert "tombstoned_at" in (await es.get(index=alias, id=hard))["_source"]
        assert "tombstoned_at" not in (await es.get(index=alias, id=live))["_source"]

        store, admin = EsIndex(es, require_alias=False), EsIndexAdmin(es)
        window = timedelta(seconds=1)

        async def purge(dry_run: bool) -> Any:
            await es.indices.refresh(index=alias)
            return await purge_tombstones(
                store,
                admin,
                alias,
                settings.retention,
                window,
                now=datetime.now(UTC),
                dry_run=dry_run,
            )

        async def both_old_enough() -> bool:
            return (await purge(dry_run=True)).scanned == 2

        await wait_for(both_old_enough, 60, "both tombstones are older than the window", 0.5)
        # the command, with the default services, finds the same two and deletes nothing
        monkeypatch.setenv(
            "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", settings.elasticsearch.index_prefix
        )
        monkeypatch.setenv("SEARCHSYNC_RETENTION_MIN_TOMBSTONE_AGE", "1s")
        capsys.readouterr()
        argv = ["tombstones", "purge", "--older-than", "1s", "--dry-run", "--json"]
        assert await asyncio.to_thread(main, argv) == ExitCode.OK
        [planned] = orjson.loads(capsys.readouterr().out)["results"]
        assert sorted(planned["candidates"]) == sorted([soft, hard]) and planned["deleted"] == 0
        report = await purge(dry_run=False)
        assert (report.deleted, report.changed, report.failed) == (2, 0, 0)
        for page in (soft, hard):
            with pytest.raises(NotFoundError):
                await es.get(index=alias, id=page)
        assert (await es.get(index=alias, id=live))["_version"] == 2

        await wait_deleted_versions_forgotten(es, alias)
        producer = Producer({"bootstrap.servers": KAFKA})
        for page in (soft, hard):  # stale: revision 1, long superseded
            event = ThinEvent(str(uuid.uuid4()), "wiki_page", page, Operation.UPSERT, 1)
            producer.produce(TOPIC, key=page.encode(), value=encode_json(event))
        assert producer.flush(30) == 0

        async def tombstones_again() -> bool:
            found = 0
            for page in (soft, hard):
                try:
                    doc = await es.get(index=alias, id=page)
                except NotFoundError:
                    continue
                assert doc["_source"]["is_deleted"] is True, f"{page} resurrected: {doc}"
                found += 1
            return found == 2

        await wait_for(tombstones_again, 120, "the stale upserts wrote tombstones again")
        again = await expected_documents(truth, ids, {hard: 3})
        assert (await converged(es, alias, again)) == (True, "")
        # the soft-deleted one is byte for byte the projection of its row, delete time included
        assert (await es.get(index=alias, id=soft))["_source"] == again[soft].body
        assert (await es.get(index=alias, id=hard))["_version"] == 3
    finally:
        await es.close()
