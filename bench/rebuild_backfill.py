"""The rebuild benchmark's timed writers: one pass of the rebuild's `Backfill` into a fresh
index (its scans and bulks timed, its ops kept), and the raw bulk of given ops with the bare
client."""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import aiomysql
from elasticsearch import AsyncElasticsearch
from searchsync.config import Settings
from searchsync.mysql.key_scope import KeyScope
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.rebuild import plan as plans
from searchsync.ops.rebuild.backfill import Backfill, ChunkDone, backfill_chunks
from searchsync.projection import Projector, Row
from searchsync.search.elasticsearch import EsIndexAdmin
from searchsync.search.es_index import BulkSizer, EncodedBulk, EsIndex
from searchsync.search.sink import IndexOp, ItemResult, Sink

from bench.common import item_errors, run_bounded

AGGREGATE_TYPE: Final = "wiki_page"


class RecordingIndex(EsIndex):
    """The backfill's writer (`EsIndex`, physical index), keeping the ops it was given so that
    the raw bulk can send exactly the same documents, and counting and timing its bulk
    requests."""

    def __init__(self, client: AsyncElasticsearch, sizer: BulkSizer, *, keep: bool) -> None:
        super().__init__(client, sizer=sizer, require_alias=False)
        self.ops: list[IndexOp] = []
        self.bulks = 0
        self.seconds = 0.0
        self._keep = keep

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        if self._keep:
            self.ops.extend(ops)
        return await super().bulk_index(ops)

    async def _send(self, bulk: EncodedBulk) -> Any:
        self.bulks += 1
        t0 = time.monotonic()
        try:
            return await super()._send(bulk)
        finally:
            self.seconds += time.monotonic() - t0


class TimedTruth(MysqlTruth):
    """`MysqlTruth` that adds up the time its keyset scans take."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        super().__init__(pool)
        self.scan_seconds = 0.0

    async def scan(
        self,
        projector: Projector,
        after_id: str | None,
        limit: int,
        *,
        scope: KeyScope | None = None,
    ) -> list[Row]:
        t0 = time.monotonic()
        try:
            return await super().scan(projector, after_id, limit, scope=scope)
        finally:
            self.scan_seconds += time.monotonic() - t0


@dataclass(slots=True)
class PassResult:
    rows: int = 0
    indexed: int = 0
    failed: int = 0
    chunks: int = 0
    bulks: int = 0
    seconds: float = math.nan
    scan_seconds: float = math.nan
    write_seconds: float = math.nan
    complete: bool = False
    tombstones: int = 0  # the floor pass's tombstones (written after the row scan)
    ops: list[IndexOp] = field(default_factory=list)


async def backfill_pass(
    settings: Settings,
    es: AsyncElasticsearch,
    truth: TimedTruth,
    projector: Projector,
    target: str,
    *,
    keep: bool,
    deadline: float | None = None,
) -> PassResult:
    """Create `target` as the rebuild does and fill it with the rebuild's `Backfill` over the
    whole table (or until `deadline`, CLOCK_MONOTONIC); only the fill is timed."""
    alias = settings.alias(projector.aggregate_type)
    meta = plans.rebuild_meta(projector.schema_version, f"bench-{target}", {}, f"{alias}_v1")
    await EsIndexAdmin(es).create_index(target, plans.index_body(projector.mapping), meta=meta)
    e = settings.elasticsearch
    writer = RecordingIndex(es, BulkSizer(e.bulk_max_actions, e.bulk_max_bytes), keep=keep)
    out = PassResult()

    async def on_chunk(chunk: ChunkDone) -> None:
        out.rows += chunk.rows
        out.indexed += chunk.indexed
        out.failed += chunk.failed
        out.chunks += 1

    backfill = Backfill(
        truth=truth,
        sink=Sink(writer),
        projector=projector,
        target_index=target,
        chunks=backfill_chunks(settings),  # as the runner builds them
        on_chunk=on_chunk,
    )
    after: str | None = None
    t0 = time.monotonic()
    if deadline is None:
        result = await backfill.run(after_id=None)
        out.complete, out.tombstones = result.complete, result.tombstones
    else:
        while time.monotonic() < deadline:
            step = await backfill.run(after_id=after, stop_after_chunks=1)
            if step.complete:
                out.complete = True
                break
            after = step.last_id
    out.seconds = time.monotonic() - t0
    out.bulks = writer.bulks
    out.scan_seconds, out.write_seconds = truth.scan_seconds, writer.seconds
    out.ops = writer.ops
    return out


async def raw_bulk(
    es: AsyncElasticsearch, ops: Sequence[IndexOp], sizer: BulkSizer, in_flight: int
) -> tuple[float, int, int]:
    """Bulk `ops` with the bare client, `sizer`'s bulk sizes, `in_flight` requests at a time:
    (seconds, bulk requests, item errors)."""
    chunks = [bulk.ops for bulk in sizer.encode(ops)]
    errors = 0

    async def send(chunk: list[IndexOp]) -> None:
        nonlocal errors
        lines: list[bytes] = []
        for op in chunk:
            lines.append(op.action_json())
            lines.append(op.body_json)
        resp: Any = await es.bulk(operations=cast(Any, lines), filter_path="items.*.status")
        errors += item_errors(resp)

    t0 = time.monotonic()
    await run_bounded(in_flight, [functools.partial(send, c) for c in chunks])
    return time.monotonic() - t0, len(chunks), errors
