"""The rebuild benchmark's child process (a separate process, as ``searchsync rebuild`` is):
phases 2 and 3 side by side, or backfill passes for the lag window of phase 5."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiomysql
from elasticsearch import AsyncElasticsearch
from searchsync.config import Settings, load_settings
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.ops.rebuild import plan as plans
from searchsync.projection import Projector, registry_from_settings
from searchsync.search.client import make_es_client
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import BulkSizer
from searchsync.search.sink import IndexOp

from bench.rebuild_backfill import AGGREGATE_TYPE, TimedTruth, backfill_pass, raw_bulk
from bench.rebuild_floor import floor_backfill

Floor = Callable[[aiomysql.Pool, AsyncElasticsearch, str, int], Awaitable[tuple[int, float, int]]]
"""A floor backfill: (pool, client, index, schema version) -> (documents, seconds, errors)."""


async def compare(
    settings: Settings,
    es: AsyncElasticsearch,
    pool: aiomysql.Pool,
    projector: Projector,
    rounds: int,
    floor: Floor | None = floor_backfill,
) -> dict[str, Any]:
    """Phase 1, the backfill of the whole table into ``<alias>_v2``, and phase 2, the raw bulk
    of exactly the documents it wrote, side by side in this process, in `rounds` rounds (backfill
    then raw, raw then backfill, backfill then raw, ...: a drift of the box over the run, such as
    the merges and page flushes that follow the seeding, falls on both alike), then the
    raw bulk with two requests in flight and `floor` (the floor backfill of the fixed libraries,
    `bench.rebuild_floor`'s by default: wiki_page only, it reads that table) once: the `Report`
    fields. The ratio is the median of the rounds' ratios; the rates
    are the rounds' medians."""
    kind = projector.aggregate_type
    alias, prefix = settings.alias(kind), settings.elasticsearch.index_prefix
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
    last: dict[str, IndexOp] = {op.doc_id: op for op in p.ops}  # a retried op counts once
    p.ops = []
    # The filled index goes before the raw bulk starts: left in place, its unflushed indexing
    # buffer and its merges would run during the raw bulk and slow it down (ratios above 1).
    await es.indices.delete(index=f"{alias}_v2")
    e = settings.elasticsearch
    sizer = BulkSizer(e.bulk_max_actions, e.bulk_max_bytes)
    body = plans.index_body(projector.mapping)
    admin = EsIndexAdmin(es)

    async def raw(in_flight: int) -> tuple[float, int, int, float]:
        scratch = f"{prefix}raw{in_flight}_{kind}_v1"
        await admin.create_index(scratch, body)
        ops = [IndexOp(scratch, o.doc_id, o.version, o.body_json) for o in last.values()]
        cpu = time.process_time()
        seconds, bulks, errors = await raw_bulk(es, ops, sizer, in_flight)
        cpu = 1e6 * (time.process_time() - cpu) / max(1, len(ops))
        await es.indices.delete(index=scratch)
        return seconds, bulks, errors, cpu

    async def backfill() -> float:
        again = await backfill_pass(settings, es, truth, projector, f"{alias}_v2", keep=False)
        await es.indices.delete(index=f"{alias}_v2")
        return (again.indexed + again.tombstones) / again.seconds

    raw_s, bulks, errors, raw_cpu = await raw(1)  # round 1: the pass above, then this
    r.update(raw_seconds=raw_s, raw_bulks=bulks, raw_errors=errors, raw_cpu_us=raw_cpu)
    backfill_rates, raw_rates = [docs / p.seconds], [len(last) / raw_s]
    for n in range(1, rounds):  # round n + 1: raw first in rounds 2, 4, ..., backfill in 3, 5, ...
        if n % 2:
            raw_rates.append(len(last) / (await raw(1))[0])
            backfill_rates.append(await backfill())
        else:
            backfill_rates.append(await backfill())
            raw_rates.append(len(last) / (await raw(1))[0])
    raw2_s = (await raw(2))[0]
    if floor is not None and (floor is not floor_backfill or kind == AGGREGATE_TYPE):
        floor_index = f"{prefix}floor_{kind}_v1"
        await admin.create_index(floor_index, body)
        cpu0 = time.process_time()
        floor_docs, floor_s, floor_errors = await floor(
            pool, es, floor_index, projector.schema_version
        )
        await es.indices.delete(index=floor_index)
        r.update(floor_cpu_us=1e6 * (time.process_time() - cpu0) / max(1, floor_docs))
        r.update(floor_docs=floor_docs, floor_seconds=floor_s, floor_errors=floor_errors)
        r.update(floor_docs_per_s=floor_docs / floor_s)
    ratios = [b / w for b, w in zip(backfill_rates, raw_rates, strict=True)]
    r.update(rounds=rounds, round_ratios=ratios, ratio=statistics.median(ratios))
    r.update(backfill_docs_per_s=statistics.median(backfill_rates))
    r.update(backfill_rows_per_s=p.rows / p.seconds)
    r.update(raw_docs=len(last), raw_docs_per_s=statistics.median(raw_rates))
    r.update(raw2_seconds=raw2_s, raw2_docs_per_s=len(last) / raw2_s)
    r.update(ratio_vs_raw2=r["backfill_docs_per_s"] / r["raw2_docs_per_s"])
    if "floor_docs_per_s" in r:
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
            rounds = int(spec["compare"])
            print(json.dumps(await compare(settings, es, pool, projector, rounds)), flush=True)
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
