"""A rebuild wired to fakes: an in-memory index, truth, Kafka topics and a catch-up group that
replays `FakeTopics` events through the real `Sink` into the new physical index."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from searchsync.config import Settings, load_settings
from searchsync.mysql.key_scope import KeyScope
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.ops.rebuild.progress import Progress
from searchsync.ops.rebuild.records import RebuildRecord
from searchsync.ops.rebuild.runner import Rebuilder
from searchsync.projection import Projector, ProjectorRegistry, Row, default_registry
from searchsync.search.sink import EXTERNAL_GTE, IndexOp, Sink

from tests.fakes.kafka_admin import FakeAdmin, FakeTopics
from tests.fakes.outbox import FakeOutbox
from tests.fakes.rebuild_state import FakeRebuildState
from tests.fakes.search_index import InMemoryIndex
from tests.fakes.truth import FakeTruth

TOPIC = "outbox.event.wiki_page"
TYPE = "wiki_page"


def page(page_id: str, revision: int = 1, *, deleted: bool = False, title: str = "") -> Row:
    return {
        "id": page_id,
        "title": title or page_id,
        "content": f"content of {page_id}",
        "relations_json": "{}",
        "revision": revision,
        "deleted_at": "2026-01-01 00:00:00" if deleted else None,
    }


class RecordingTruth(FakeTruth):
    """Logs every scan into `log`; `on_scan(n)` runs before the n-th scan (1-based)."""

    def __init__(self, log: list[str]) -> None:
        super().__init__()
        self.log = log
        self.scans: list[tuple[str | None, int]] = []
        self.on_scan: Callable[[int], None] = lambda _n: None

    async def scan(
        self,
        projector: Projector,
        after_id: str | None,
        limit: int,
        *,
        scope: KeyScope | None = None,
    ) -> list[Row]:
        self.scans.append((after_id, limit))
        self.log.append("scan")
        self.on_scan(len(self.scans))
        return await super().scan(projector, after_id, limit, scope=scope)


class RecordingAdmin(FakeAdmin):
    def __init__(self, topics: FakeTopics, log: list[str]) -> None:
        super().__init__(topics)
        self.log = log

    def watermarks(self, topic: str) -> Any:
        self.log.append("watermarks")
        return super().watermarks(topic)


class FakeCatchUp:
    """Replays events ``{"id", "revision"}`` from the group's committed offsets: re-reads the
    truth, writes the projection (or a tombstone at the newest known revision), commits."""

    def __init__(self, world: World, record: RebuildRecord) -> None:
        self.world = world
        self.record = record

    async def run(self, stop: asyncio.Event) -> int:
        """Replay until `stop` is set, as the catch-up consumer; exit code 0."""
        w, group = self.world, self.record.catchup_group
        w.catchups.append(group)
        sink = Sink(w.es.physical_writer())
        while not stop.is_set():
            for partition, log in w.topics.logs[TOPIC].items():
                tp = (TOPIC, partition)
                offset = w.topics.commits.get((group, tp), 0)
                while offset < len(log):
                    event = orjson.loads(log[offset][0])
                    await self._apply(sink, event["id"], int(event["revision"]))
                    offset += 1
                    w.topics.commits[(group, tp)] = offset
            await asyncio.sleep(0.001)
        return 0

    async def _apply(self, sink: Sink, doc_id: str, revision: int) -> None:
        w = self.world
        rows = await w.truth.rows_by_id(w.projector, [doc_id])
        if doc_id in rows:
            document = w.projector.project(rows[doc_id])
        else:
            floor = w.truth.floors.get((TYPE, doc_id), 0)
            document = w.projector.tombstone(doc_id, max(revision, floor))
        await sink.write([IndexOp.from_document(self.record.target_index, document)])


class RewritingOutbox(FakeOutbox):
    """`FakeOutbox` that also applies each REBUILD append as the catch-up group's REBUILD
    rewrite would: the fresh projection at the same version (``external_gte``) into the alias's
    write index."""

    def __init__(self, world: World) -> None:
        super().__init__()
        self.world = world

    async def append_rebuild(self, aggregate_type: str, aggregate_id: str, revision: int) -> None:
        await super().append_rebuild(aggregate_type, aggregate_id, revision)
        w = self.world
        row = w.truth.tables.get("wiki_page", {}).get(aggregate_id)
        doc = w.projector.project(row) if row else w.projector.tombstone(aggregate_id, revision)
        target = w.es.alias_target(w.alias)
        assert target is not None
        op = IndexOp(target, doc.doc_id, doc.source_revision, doc.encoded, EXTERNAL_GTE)
        await Sink(w.es.physical_writer()).write([op])


@dataclass
class World:
    env: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    es: InMemoryIndex = field(default_factory=InMemoryIndex)
    topics: FakeTopics = field(default_factory=FakeTopics)
    state: FakeRebuildState = field(default_factory=FakeRebuildState)
    metrics: RebuildMetrics = field(default_factory=RebuildMetrics)
    out: io.StringIO = field(default_factory=io.StringIO)
    catchups: list[str] = field(default_factory=list)
    registry: ProjectorRegistry = field(default_factory=default_registry)
    sleeps: list[float] = field(default_factory=list)
    on_first_sleep: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.outbox = RewritingOutbox(self)
        self.truth = RecordingTruth(self.log)
        self.kafka = RecordingAdmin(self.topics, self.log)
        self.topics.topic(TOPIC, [])
        self.projector = self.registry.get(TYPE)

    @property
    def settings(self) -> Settings:
        env = {
            "SEARCHSYNC_REBUILD_POLL_INTERVAL_S": "0.005",
            "SEARCHSYNC_REBUILD_CHUNK_INITIAL": "3",
            "SEARCHSYNC_REBUILD_CHUNK_MIN": "3",
            "SEARCHSYNC_REBUILD_CHUNK_MAX": "3",
            "SEARCHSYNC_REBUILD_CATCHUP_TIMEOUT_S": "10",
            "SEARCHSYNC_REBUILD_LIVE_WAIT_TIMEOUT_S": "0.2",
            "SEARCHSYNC_REBUILD_SAMPLE_SIZE": "1000",
            **self.env,
        }
        return load_settings(env)

    @property
    def alias(self) -> str:
        return self.settings.alias(TYPE)

    async def sleep(self, seconds: float) -> None:
        """The rebuild's sleep: recorded, not waited; `on_first_sleep` hooks run once."""
        self.sleeps.append(seconds)
        hooks, self.on_first_sleep[:] = list(self.on_first_sleep), []
        for hook in hooks:
            await hook()
        await asyncio.sleep(0.001)

    def put(self, row: Row) -> None:
        self.truth.put(row, table="wiki_page")

    async def live_write(self, doc_id: str) -> None:
        """What the live group does with a change: the projection (or tombstone) via the alias."""
        row = self.truth.tables.get("wiki_page", {}).get(doc_id)
        if row is not None:
            document = self.projector.project(row)
        else:
            document = self.projector.tombstone(doc_id, self.truth.floors[(TYPE, doc_id)])
        await Sink(self.es).write([IndexOp.from_document(self.alias, document)])

    def event(self, doc_id: str, revision: int) -> None:
        payload = orjson.dumps({"id": doc_id, "revision": revision})
        self.topics.logs[TOPIC].setdefault(0, []).append((payload, []))

    async def init_alias(self, *, schema_version: int = 2) -> None:
        """``<alias>_v1`` holding the projection of every row, as a live group would have it."""
        name = f"{self.alias}_v1"
        meta = {"projection_schema_version": schema_version}
        await self.es.admin.create_index(name, self.projector.mapping, meta=meta, alias=self.alias)
        rows = self.truth.tables.get("wiki_page", {})
        ops = [IndexOp.from_document(self.alias, self.projector.project(r)) for r in rows.values()]
        await Sink(self.es).write(ops)

    def rebuilder(self) -> Rebuilder:
        return Rebuilder(
            settings=self.settings,
            registry=self.registry,
            index_admin=self.es.admin,
            writer=self.es.physical_writer(),
            reader=self.es,
            truth=self.truth,
            kafka=self.kafka,
            state=self.state,
            catchup=lambda record, _topics, stop: FakeCatchUp(self, record).run(stop),
            metrics=self.metrics,
            progress=Progress(stream=self.out, json_lines=True),
            outbox=self.outbox,
            sleep=self.sleep,
        )
