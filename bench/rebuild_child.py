"""The rebuild benchmark's child process (a separate process, as ``searchsync rebuild`` is):
phases 2 and 3 side by side, or backfill passes for the lag window of phase 5."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import aiomysql
from elasticsearch import AsyncElasticsearch

from bench.rebuild_backfill import AGGREGATE_TYPE, TimedTruth, backfill_pass, raw_bulk
from bench.rebuild_floor import floor_backfill
from consumer.config import Settings, load_settings
from consumer.mysql.pool import close_pool, open_pool
from consumer.ops.rebuild import plan as plans
from consumer.projection import Projector, registry_from_settings
from consumer.search.client import make_es_client
from consumer.search.elasticsearch import EsIndexAdmin
from consumer.search.es_index import BulkSizer
from consumer.search.sink import IndexOp


async def compare(
    settings: Settings, es: AsyncElasticsearch, pool: aiomysql.Pool, projector: Projector
) -> dict[str, Any]:
    """Phase 1, the backfill of the whole table into ``<alias>_v2``, then phase 2, the raw bulk
    of exactly the documents it wrote, side by side in this process: the `Report` fields."""
    alias, prefix = settings.alias(AGGREGATE_TYPE), settings.elasticsearch.index_prefix
    truth = TimedTruth(pool)
    r: dict[str, Any] = {"table_rows": await truth.count(projector)}
    cpu0 = time.process_time()
    p = await backfill_pass(settings, es, truth, projector, f"{alias}_v2", keep=True)
    r.update(backfill_cpu_us=1e6 * (time.process_time() - cpu0) / max(1, p.rows))
    docs = p.indexed + p.tombstones
    r.update(backfill_rows=p.rows, backfill_indexed=docs, backfill_tombstones=p.tombstones)
    r.update(backfill_failed=p.failed, backfill_chunks=p.chunks, backfill_bulks=p.bulks)
    r.update(backfill_seconds=p.seconds, backfill_scan_seconds=p.scan_seconds)
    r.update(backfill_write_seconds=p.write_seconds)
    r.update(backfill_rows_per_s=p.rows / p.seconds, backfill_docs_per_s=docs / p.seconds)
    last: dict[str, IndexOp] = {op.doc_id: op for op in p.ops}  # a retried op counts once
    # The filled index goes before the raw bulk starts: left in place, its unflushed indexing
    # buffer and its merges would run during the raw bulk and slow it down (ratios above 1).
    await es.indices.delete(index=f"{alias}_v2")
    e = settings.elasticsearch
    sizer = BulkSizer(e.bulk_max_actions, e.bulk_max_bytes)
    body = plans.index_body(projector.mapping)
    admin = EsIndexAdmin(es)
    results: list[tuple[float, int, int]] = []
    for in_flight in (1, 2):
        scratch = f"{prefix}raw{in_flight}_{AGGREGATE_TYPE}_v1"
        await admin.create_index(scratch, body)
        ops = [IndexOp(scratch, o.doc_id, o.version, o.body_json) for o in last.values()]
        cpu0 = time.process_time()
        results.append(await raw_bulk(es, ops, sizer, in_flight))
        if in_flight == 1:
            r.update(raw_cpu_us=1e6 * (time.process_time() - cpu0) / max(1, len(ops)))
        await es.indices.delete(index=scratch)
    (raw_s, bulks, errors), (raw2_s, _, _) = results
    floor_index = f"{prefix}floor_{AGGREGATE_TYPE}_v1"
    await admin.create_index(floor_index, body)
    cpu0 = time.process_time()
    floor_docs, floor_s, floor_errors = await floor_backfill(
        pool, es, floor_index, projector.schema_version
    )
    await es.indices.delete(index=floor_index)
    r.update(floor_cpu_us=1e6 * (time.process_time() - cpu0) / max(1, floor_docs))
    r.update(floor_docs=floor_docs, floor_seconds=floor_s, floor_errors=floor_errors)
    r.update(floor_docs_per_s=floor_docs / floor_s)
    r.update(raw_docs=len(last), raw_bulks=bulks, raw_errors=errors)
    r.update(raw_seconds=raw_s, raw_docs_per_s=len(last) / raw_s)
    r.update(raw2_seconds=raw2_s, raw2_docs_per_s=len(last) / raw2_s)
    r.update(ratio=r["backfill_docs_per_s"] / r["raw_docs_per_s"])
    r.update(ratio_vs_raw2=r["backfill_docs_per_s"] / r["raw2_docs_per_s"])
    r.update(floor_ratio=r["floor_docs_per_s"] / r["raw_docs_per_s"])
    return r


async def backfill_child(spec_json: str) -> None:
    """The rebuild during the second lag window (a child process, as ``searchsync rebuild``):
    backfill passes over the whole table into fresh indices until ``seconds`` have passed;
    prints ``START``, then one JSON line per pass. With ``compare`` instead: phases 1 and 2
    (`compare`), one JSON line."""
    spec = json.loads(spec_json)
    settings = load_settings(dict(os.environ))
    projector = registry_from_settings(settings.projection).get(AGGREGATE_TYPE)
    alias = settings.alias(AGGREGATE_TYPE)
    pool = await open_pool(settings.mysql, maxsize=2)
    es = make_es_client(settings)
    try:
        if spec.get("compare"):
            print(json.dumps(await compare(settings, es, pool, projector)), flush=True)
            return
        seconds = float(spec["seconds"])
        print("START", flush=True)
        deadline = time.monotonic() + seconds
        version = 10
        while time.monotonic() < deadline:
            target = f"{alias}_v{version}"
            p = await backfill_pass(
                settings, es, TimedTruth(pool), projector, target, keep=False, deadline=deadline
            )
            await es.indices.delete(index=target)
            stats = {"rows": p.rows, "seconds": p.seconds, "complete": p.complete}
            print(json.dumps(stats), flush=True)
            version += 1
    finally:
        await es.close()
        await close_pool(pool)
