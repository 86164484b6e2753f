"""The repair wheel on the real stack (docs/design.md, "Repair"; invariants 9, 12, 13).

Each drift kind is injected behind searchsync's back; one rotation, while a writer keeps
changing other rows, must find exactly the injected cases, heal every one of them through the
outbox and the live consumer, and report nothing else. The REBUILD rewrite race runs on the
real node too.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from typing import Any

import aiomysql
import pytest
from searchsync.config import RepairSettings
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.repair.generations import MysqlWheelState
from searchsync.ops.repair.model import FindingKind
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel
from searchsync.projection import default_registry
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import EsIndex
from searchsync.search.port import StoredDocument
from searchsync.search.sink import EXTERNAL_GTE, IndexOp, Sink
from searchsync.stream.fence import SchemaFence
from searchsync.stream.processor import Processor
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent
from searchsync.writer import PageWriter

from tests.fakes.truth import FakeTruth
from tests.integration.conftest_mysql import revision_floors
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

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
REL = {"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character", "title": "hero"}]}


async def _wait_converged(pool: aiomysql.Pool, es: Any, alias: str, ids: list[str]) -> None:
    last = [""]

    async def check() -> bool:
        expected = await expected_documents(MysqlTruth(pool), ids, await revision_floors(pool, ids))
        ok, why = await converged(es, alias, expected)
        last[0] = why
        return ok

    try:
        await wait_for(check, 180, "documents converge")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {last[0]}") from None


@pytest.mark.parametrize("engine", ENGINES)
async def test_one_rotation_finds_and_heals_every_kind_under_live_writes(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str, engine: str
) -> None:
    env = harness_env("rp", **(opensearch_env() if engine == "opensearch" else {}))
    consumer = InProcessConsumer(env)
    settings = consumer.settings
    alias = settings.alias("wiki_page")
    projector = default_registry().get("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    writer = PageWriter(app_pool)
    physical = f"{alias}_v1"
    stop_writes = asyncio.Event()
    try:
        await consumer.start()
        names = ["missing", "stale", "orphan", "hard", "edited", "schema", "flag", "soft"]
        ids = {n: f"{id_prefix}{n}" for n in names}
        ok_ids = [f"{id_prefix}ok{n}" for n in range(12)]
        live_ids = [f"{id_prefix}live{n}" for n in range(4)]
        for i in [*ids.values(), *ok_ids, *live_ids]:
            await writer.create(i, f"title {i}", "body", REL)
        await writer.soft_delete(ids["soft"])
        every = [*ids.values(), *ok_ids, *live_ids]
        await _wait_converged(consumer_pool, es, alias, every)

        async def body(i: str) -> tuple[int, dict[str, Any]]:
            doc = await es.get(index=physical, id=i)
            return int(doc["_version"]), dict(doc["_source"])

        # Inject, behind searchsync's back, straight into the physical index or MySQL. A node
        # remembers a deleted document's version for index.gc_deletes (60 s by default) and
        # refuses external writes at or below it meanwhile; a drift that old is forgotten, so
        # the test forgets at once instead of waiting a minute.
        await es.indices.put_settings(index=physical, settings={"index.gc_deletes": "0s"})
        await es.delete(index=physical, id=ids["missing"])
        orphan = projector.project(
            {
                "id": ids["orphan"],
                "title": "ghost",
                "content": "x",
                "relations_json": "{}",
                "revision": 5,
                "deleted_at": None,
            }
        )
        await es.delete(index=physical, id=ids["orphan"])  # its row is deleted below
        await es.index(
            index=physical,
            id=ids["orphan"],
            document=orphan.body,
            version=5,
            version_type="external",
        )
        async with app_pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute(
                    "DELETE FROM wiki_page WHERE id IN (%s, %s)", (ids["orphan"], ids["hard"])
                )
                # The row moves ahead without an event: its document is now a revision behind.
                await cur.execute(
                    "UPDATE wiki_page SET title = 'moved', revision = revision + 1 WHERE id = %s",
                    (ids["stale"],),
                )
            await conn.commit()
        for name, change in [
            ("edited", {"title": "edited in ES"}),
            ("schema", {"projection_schema_version": 1}),
            ("flag", {"is_deleted": True}),
        ]:
            v, src = await body(ids[name])
            await es.index(
                index=physical,
                id=ids[name],
                document={**src, **change},
                version=v,
                version_type="external_gte",
            )
        await es.delete(index=physical, id=ids["soft"])  # a fresh soft delete's lost tombstone
        await es.indices.refresh(index=physical)

        async def live_writes() -> None:
            n = 0
            while not stop_writes.is_set():
                await writer.update(live_ids[n % len(live_ids)], title=f"live {n}")
                n += 1
                await asyncio.sleep(0.05)

        writes = asyncio.create_task(live_writes())
        wheel = Wheel(
            projectors=[projector],
            alias_for=settings.alias,
            truth=MysqlTruth(consumer_pool, id_prefix=id_prefix),
            index=EsIndex(es),
            state=MysqlWheelState(consumer_pool, scope=f"t{uuid.uuid4().hex[:8]}/"),
            healer=Healer(MysqlOutbox(consumer_pool), appends_per_s=50),
            settings=RepairSettings(
                bucket_count=3, page_size=4, page_min=2, content_share=1.0, settle_s=4.0
            ),
        )
        report = await wheel.rotation()
        stop_writes.set()
        await writes
        found = {(f.kind, f.id) for b in report.buckets for f in b.findings}
        assert found == {
            (FindingKind.MISSING, ids["missing"]),
            (FindingKind.MISSING, ids["soft"]),
            (FindingKind.STALE, ids["stale"]),
            (FindingKind.ORPHAN, ids["orphan"]),
            (FindingKind.ORPHAN, ids["hard"]),
            (FindingKind.CONTENT_DRIFT, ids["edited"]),
            (FindingKind.SCHEMA_STALE, ids["schema"]),
            (FindingKind.DELETED_FLAG, ids["flag"]),
        }
        assert report.interrupted == 0
        assert sum(b.appended for b in report.buckets) == 8

        # Healed through the consumer: every document is its row's projection (or a tombstone
        # at the raised floor v + 1), and a second rotation finds nothing.
        await _wait_converged(consumer_pool, es, alias, every)
        assert (await revision_floors(consumer_pool, [ids["orphan"]])) == {ids["orphan"]: 6}
        await es.indices.refresh(index=physical)
        again = await wheel.rotation()
        assert sum(again.counts().values()) == 0, again.counts()
    finally:
        stop_writes.set()
        with contextlib.suppress(Exception):
            await consumer.close()
        await es.close()
        await drop_indices(settings)


def page_row(aggregate_id: str, revision: int, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": aggregate_id,
        "title": f"title {aggregate_id} r{revision}",
        "content": "content",
        "relations_json": "{}",
        "revision": revision,
        "deleted_at": None,
    }
    return {**row, **overrides}


class _RacingEsIndex(EsIndex):
    """`EsIndex` that runs `after_read` once, right after the stored-projection read."""

    after_read: Any = None

    async def get_documents(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredDocument | None]:
        found = await super().get_documents(alias, ids)
        hook, self.after_read = self.after_read, None
        if hook is not None:
            await hook()
        return found


async def test_a_rebuild_rewrite_racing_a_newer_update_leaves_the_newer_document_on_es() -> None:
    settings = InProcessConsumer(harness_env("rr")).settings
    alias = settings.alias("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    try:
        registry = default_registry()
        projector = registry.get("wiki_page")
        truth = FakeTruth()
        index = _RacingEsIndex(es)
        row3 = page_row("r1", 3)
        truth.put(row3, table="wiki_page")
        drifted = {**projector.project(row3).body, "title": "edited"}
        await es.index(
            index=f"{alias}_v1", id="r1", document=drifted, version=3, version_type="external"
        )
        row4 = page_row("r1", 4, title="newer")
        newer = projector.project(row4)

        async def newer_update() -> None:
            truth.put(row4, table="wiki_page")
            [result] = await index.bulk_index([IndexOp.from_document(alias, newer)])
            assert result.status == 200

        index.after_read = newer_update
        processor = Processor(
            registry=registry,
            truth=truth,
            sink=Sink(index),
            alias_for=settings.alias,
            fence=SchemaFence(EsIndexAdmin(es), interval_s=60.0),
        )
        event = ThinEvent("e", "wiki_page", "r1", Operation.REBUILD, 3)
        [verdict] = await processor.process(
            [Work(Key("wiki_page", "r1"), (event,), (RawMessage("t", 0, 0),), 1)]
        )
        assert verdict.finished
        stored = await es.get(index=alias, id="r1")
        assert (stored["_version"], stored["_source"]) == (4, newer.body)
        # and the rewrite itself: gte at the same version is accepted, a lower one is not
        same = IndexOp(alias, "r1", 4, newer.encoded, EXTERNAL_GTE)
        lower = IndexOp(alias, "r1", 3, newer.encoded, EXTERNAL_GTE)
        results = await index.bulk_index([same, lower])
        assert [r.status for r in results] == [200, 409]
    finally:
        await es.close()
        await drop_indices(settings)
