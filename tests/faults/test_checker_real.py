"""The independent checker is not vacuous: on the real MariaDB and Elasticsearch it finds 0
divergent documents where the projector's documents are written, and counts each kind of damage
(a wrong field, a resurrected hard delete, a missing document, an orphan) once it is done."""

from __future__ import annotations

import os
import uuid

import aiomysql
import pytest
from searchsync.config import load_settings
from searchsync.projection import default_registry
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.faults import checker
from tests.integration.consumer_harness import drop_indices, prepare_index

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_the_checker_counts_every_kind_of_damage(app_pool: aiomysql.Pool) -> None:
    u = uuid.uuid4().hex[:8]
    settings = load_settings({**os.environ, "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"chk{u}"})
    await prepare_index(settings)
    alias = settings.alias("wiki_page")
    prefix = f"chk{u}-"
    live, soft, hard = f"{prefix}live", f"{prefix}soft", f"{prefix}hard"
    w = PageWriter(app_pool)
    rel = {"RELATED_CHARACTER": [{"entity_id": "c1", "entity_type": "character"}]}
    for page in (live, soft, hard):
        await w.create(page, "Checked", "v1", rel)
    await w.soft_delete(soft)
    await w.hard_delete(hard)  # revision 2
    projector = default_registry().get("wiki_page")
    page_rows = {}
    async with app_pool.acquire() as conn, conn.cursor(aiomysql.DictCursor) as cur:
        await cur.execute(
            "SELECT id, title, content, relations_json, revision, deleted_at FROM wiki_page"
            " WHERE id IN (%s, %s)",
            (live, soft),
        )
        page_rows = {r["id"]: r for r in await cur.fetchall()}
        await conn.commit()
    docs = [projector.project(page_rows[live]), projector.project(page_rows[soft])]
    docs.append(projector.tombstone(hard, 2))
    es = make_es_client(settings)
    try:

        async def put(doc_id: str, version: int, body: dict[str, object]) -> None:
            await es.index(index=alias, id=doc_id, version=version, version_type="external",
                           document=body, refresh=True)  # fmt: skip

        for d in docs:
            await put(d.doc_id, d.source_revision, d.body)
        clean = await checker.check(app_pool, es, alias, prefix)
        assert (clean.rows, clean.hard_deleted, clean.divergent) == (2, 1, 0), clean.examples

        await put(live, 2, {**docs[0].body, "title": "edited", "source_revision": 2})  # ahead
        await put(hard, 3, {**docs[0].body, "id": hard, "source_revision": 3})  # resurrected
        await put(f"{prefix}orphan", 1, {**docs[0].body, "id": f"{prefix}orphan"})
        await es.delete(index=alias, id=soft, refresh=True)  # missing
        damaged = await checker.check(app_pool, es, alias, prefix)
        assert (damaged.divergent, damaged.resurrected) == (4, 1), damaged.examples
    finally:
        await es.close()
        await drop_indices(settings)
