"""The repair benchmark's wheel: built as `searchsync repair` builds it, limited to the bench's
rows and state scope, its sides timed; and the live phase's rotation child."""

from __future__ import annotations

import inspect
import json
import os
import time
from dataclasses import replace
from typing import Any, Final

import aiomysql
from elasticsearch import AsyncElasticsearch
from searchsync.config import Settings, load_settings
from searchsync.mysql.outbox import MysqlOutbox
from searchsync.mysql.pool import close_pool, open_pool
from searchsync.mysql.truth import MysqlTruth
from searchsync.ops.repair.generations import MysqlWheelState
from searchsync.ops.repair.load import Limits
from searchsync.ops.repair.span import Healer
from searchsync.ops.repair.wheel import Wheel
from searchsync.projection import Projector, default_registry
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex

AGGREGATE_TYPE: Final = "wiki_page"


class Timed:
    """A proxy that adds up the time spent in every coroutine method of `inner`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        async def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.monotonic()
            try:
                return await attr(*args, **kwargs)
            finally:
                self.seconds += time.monotonic() - t0

        return timed


def bench_projector(table: str) -> Projector:
    """The registry's wiki_page projector, reading `table` (the shared table or a scratch copy;
    the aggregate type, hence every bucket key, stays ``wiki_page``)."""
    return replace(default_registry().get(AGGREGATE_TYPE), table=table)


def build_wheel(
    settings: Settings,
    pool: aiomysql.Pool,
    es: AsyncElasticsearch,
    *,
    table: str,
    sync_hash_column: bool,
    id_prefix: str,
    scope: str,
    buckets: int | None,
    progress_cb: Any = None,
) -> tuple[Wheel, Timed, Timed, Timed]:
    """The wheel as `searchsync repair` builds it (`Runtime.repair_wheel`), limited to the
    bench's rows and state scope, without load ceilings, in dry-run; its sides and state timed."""
    repair = settings.repair
    if buckets is not None:
        repair = replace(repair, bucket_count=buckets)
    truth = Timed(MysqlTruth(pool, sync_hash_column=sync_hash_column, id_prefix=id_prefix))
    index = Timed(EsIndex(es))
    state = Timed(MysqlWheelState(pool, scope=scope))
    wheel = Wheel(
        projectors=[bench_projector(table)],
        alias_for=settings.alias,
        truth=truth,
        index=index,
        state=state,
        healer=Healer(MysqlOutbox(pool), appends_per_s=1.0, dry_run=True),
        settings=repair,
        tombstone_minimum=settings.retention.tombstone_minimum,
        progress=progress_cb,
        limits=Limits(),
    )
    return wheel, truth, index, state


async def rotation_child(spec_json: str) -> None:
    """The live phase's repair (run as a child process): rotations back to back until killed,
    printing ``READY`` once and ``ROTATION <seconds>`` per rotation."""
    spec = json.loads(spec_json)
    env = dict(os.environ)
    env["SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX"] = str(spec["index_prefix"])
    settings = load_settings(env)
    pool = await open_pool(settings.mysql, maxsize=2)
    es = make_es_client(settings)
    try:
        wheel, *_ = build_wheel(
            settings,
            pool,
            es,
            table=str(spec["table"]),
            sync_hash_column=bool(spec["sync_hash_column"]),
            id_prefix=str(spec["id_prefix"]),
            scope=str(spec["scope"]),
            buckets=spec["buckets"],
        )
        print("READY", flush=True)
        while True:
            report = await wheel.rotation()
            print(f"ROTATION {report.seconds}", flush=True)
    finally:
        await es.close()
        await close_pool(pool)
