"""Rollout and rollback of a changed projection on the real stack (docs/design.md, "Schema
fence" and "Rebuild"; invariants 8, 11, 12).

An old-release consumer (the packaged projector) indexes this test's pages into `<alias>_v1`.
A rebuild with the next release's projector (`tests.integration.projector_v3`: schema version
+1) runs while writers keep changing the pages, swaps the alias to `<alias>_v2` and sweeps it:
documents the old consumer wrote through the alias before its fence went up are rewritten
through REBUILD events. After the swap the old consumer is fenced and no document of v2 carries
the old `projection_schema_version`, also while the writers go on. `searchsync index rollback`
swaps back: the old consumer unfences and catches up, every page in v1 equal to the old
projector's projection of its row.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from typing import Any

import aiomysql
import orjson
import pytest
from elasticsearch import AsyncElasticsearch
from searchsync.cli.reconcile import run_rebuild
from searchsync.config import load_settings
from searchsync.devtools.loadgen import run_loadgen
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.rebuild.plan import RebuildOptions
from searchsync.ops.rebuild.records import Status
from searchsync.projection import default_registry
from searchsync.runtime import Runtime
from searchsync.search.client import make_es_client
from searchsync.writer import PageWriter

from tests.integration import projector_v3
from tests.integration.conftest_mysql import fetch_all
from tests.integration.consumer_harness import (
    REBUILD_ON_SHARED_TABLE,
    REPO,
    InProcessConsumer,
    expected_documents,
    harness_env,
    prepare_index,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

# The table and the topic are shared with every other test (see test_rebuild_e2e.py): the
# verification's limits are loose; this test's own pages are checked exactly.
SHARED = {
    **REBUILD_ON_SHARED_TABLE,
    "SEARCHSYNC_REBUILD_MAX_QUERY_DIFF_RATE": "0.5",  # the writers change titles meanwhile
    "SEARCHSYNC_REBUILD_CATCHUP_TIMEOUT_S": "180",
    "SEARCHSYNC_PIPELINE_FENCE_CHECK_INTERVAL_S": "3",
}
WATCH_S = 4.0  # how long the fenced consumer is watched writing nothing into v2 (8 checks)
OLD = default_registry().get("wiki_page").schema_version


async def _floors(pool: aiomysql.Pool, ids: list[str]) -> dict[str, int]:
    rows = await fetch_all(
        pool,
        "SELECT aggregate_id, revision FROM search_revision_floor WHERE aggregate_type ="
        " 'wiki_page' AND aggregate_id IN (" + ",".join(["%s"] * len(ids)) + ")",
        tuple(ids),
    )
    return {r["aggregate_id"]: int(r["revision"]) for r in rows}


async def _old_shape(es: AsyncElasticsearch, index: str) -> list[str]:
    """Ids of `index`'s documents with the old release's schema version."""
    await es.indices.refresh(index=index)
    resp: Any = await es.search(
        index=index,
        query={"term": {"projection_schema_version": OLD}},
        size=100,
        source=False,
    )
    return [hit["_id"] for hit in resp["hits"]["hits"]]


def _rollback(env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "searchsync", "index", "rollback", "--execute", "--json"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    result: dict[str, Any] = orjson.loads(proc.stdout)
    return result


async def test_a_schema_changing_rebuild_fences_the_old_consumer_and_a_rollback_catches_up(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = f"ro-{uuid.uuid4().hex[:8]}"
    first = [f"{prefix}-a{i:03d}" for i in range(40)]
    env = harness_env("ro", SEARCHSYNC_REBUILD_QUERIES=",".join(first[:10]), **SHARED)
    old = InProcessConsumer(env)  # the old release: the packaged projector
    settings = old.settings
    new_settings = load_settings(
        {**env, "SEARCHSYNC_PROJECTION_MODULES": "tests.integration.projector_v3"}
    )
    assert Runtime(new_settings).registry.get("wiki_page").schema_version == OLD + 1
    alias = settings.alias("wiki_page")
    v1, v2 = f"{alias}_v1", f"{alias}_v2"
    writer = PageWriter(app_pool)
    es = make_es_client(settings)
    stop_writers = asyncio.Event()
    await prepare_index(settings)
    await old.start()
    try:
        for page_id in first:
            await writer.create(page_id, f"first {page_id}", "before the rebuild", {})
        await wait_for(
            lambda: _all_equal(es, v1, consumer_pool, first), 120, "the first pages in v1"
        )

        async def keep_writing() -> int:
            """Updates to this test's pages until told to stop: before, during and after the
            swap (so the old consumer has work when the alias moves)."""
            n = 0
            while not stop_writers.is_set():
                await writer.update(first[n % 20], content=f"write {n}")
                n += 1
                await asyncio.sleep(0.01)
            return n

        load = asyncio.gather(
            run_loadgen(
                writer,
                pages=40,
                updates=160,
                concurrency=3,
                delete_ratio=0.15,
                hard_delete_ratio=0.1,
                seed=11,
                id_prefix=f"{prefix}-b",
            ),
            keep_writing(),
        )
        outcome = await run_rebuild(
            Runtime(new_settings),
            RebuildOptions("wiki_page", wait_for_live=False),
            json_lines=True,
        )
        assert outcome.ok, outcome.message
        assert outcome.record is not None and outcome.record.status is Status.DONE
        assert list((await es.indices.get_alias(name=alias)).body) == [v2]
        meta = (await es.indices.get_mapping(index=v2))[v2]["mappings"]["_meta"]
        assert meta["projection_schema_version"] == projector_v3.SCHEMA_VERSION
        sweeps = [
            orjson.loads(line)
            for line in capsys.readouterr().out.splitlines()
            if line.startswith("{") and '"sweep"' in line
        ]
        assert sweeps, "the rebuild swept the new index after the swap"
        print("sweeps:", [s.get("message") for s in sweeps])  # shown with -rP

        # the old consumer is fenced and writes nothing of its shape into v2
        async def fenced() -> bool:
            return old.metric("searchsync_schema_fenced", alias=alias) == 1

        await wait_for(fenced, 60, "the old consumer fenced after the swap")
        assert await _old_shape(es, v2) == [], "old-shape documents in v2 after the sweep"
        later = [f"{prefix}-c{i:02d}" for i in range(5)]
        for page_id in later:
            await writer.create(page_id, f"later {page_id}", "while fenced", {})
        watch_until = time.monotonic() + WATCH_S
        while time.monotonic() < watch_until:
            assert await fenced()
            assert await _old_shape(es, v2) == [], "the fenced consumer wrote into v2"
            await asyncio.sleep(0.25)
        found = await es.mget(index=v2, ids=later)
        assert not [d["_id"] for d in found["docs"] if d.get("found")], "written into v2"
        stop_writers.set()
        report, _ = await load
        assert old.metric("outbox_dead_total") == 0

        # the rollback: the old consumer unfences and catches up in v1, 0 divergence
        back = await asyncio.to_thread(_rollback, env)
        assert back["from"] == v2 and back["to"] == v1, back
        ids = sorted({*first, *later, *report.final_revisions})
        await wait_for(
            lambda: _all_equal(es, v1, consumer_pool, ids), 180, "every page equal in v1"
        )
        assert old.metric("searchsync_schema_fenced", alias=alias) == 0
        assert await _diverged(es, v1, consumer_pool, ids) == []
        assert await _old_shape(es, v2) == []
        assert old.metric("outbox_dead_total") == 0
    finally:
        stop_writers.set()
        code = await old.close()
        with contextlib.suppress(Exception):
            await es.indices.delete(index=f"{alias}_v*")
        await es.close()
    assert code == 0


async def _all_equal(
    es: AsyncElasticsearch, index: str, pool: aiomysql.Pool, ids: list[str]
) -> bool:
    return await _diverged(es, index, pool, ids) == []


async def _diverged(
    es: AsyncElasticsearch, index: str, pool: aiomysql.Pool, ids: list[str]
) -> list[str]:
    """The ids whose document in `index` is not the old projector's projection of the row (or
    the tombstone at the revision floor): at its version, with its body."""
    expected = await expected_documents(MysqlTruth(pool), ids, await _floors(pool, ids))
    resp: Any = await es.mget(index=index, ids=list(expected))
    return [
        doc["_id"]
        for doc in resp["docs"]
        if not doc.get("found")
        or doc["_version"] != expected[doc["_id"]].source_revision
        or not expected[doc["_id"]].matches(doc["_source"])
    ]
