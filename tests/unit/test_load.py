"""The initial load (`searchsync.ops.load`) on fakes: parts, resume, a second run, the live group's
watermark, the lag guard and the refusals."""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from searchsync.config import Settings, load_settings
from searchsync.errors import OperationRefused
from searchsync.ops.load.outcome import LoadOptions, LoadOutcome
from searchsync.ops.load.parts import Status
from searchsync.ops.load.runner import Loader
from searchsync.ops.rebuild.progress import Progress
from searchsync.projection import Row, default_registry
from searchsync.search.sink import IndexOp, Sink

from tests.fakes.kafka_admin import FakeAdmin, FakeTopics
from tests.fakes.load_state import FakeLoadState
from tests.fakes.search_index import InMemoryIndex
from tests.unit.rebuild_fakes import TOPIC, TYPE, RecordingTruth, page

GROUP = "live"


@dataclass
class LoadWorld:
    env: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    es: InMemoryIndex = field(default_factory=InMemoryIndex)
    topics: FakeTopics = field(default_factory=FakeTopics)
    state: FakeLoadState = field(default_factory=FakeLoadState)
    out: io.StringIO = field(default_factory=io.StringIO)
    sleeps: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.truth = RecordingTruth(self.log)
        self.projector = default_registry().get(TYPE)
        self.topics.topic(TOPIC, [b"e1", b"e2", b"e3"], [])  # watermark: 3 and 0

    @property
    def settings(self) -> Settings:
        env = {
            "SEARCHSYNC_KAFKA_GROUP_ID": GROUP,
            "SEARCHSYNC_REBUILD_CHUNK_INITIAL": "3",
            "SEARCHSYNC_REBUILD_CHUNK_MIN": "3",
            "SEARCHSYNC_REBUILD_CHUNK_MAX": "3",
            "SEARCHSYNC_LOAD_MAX_LIVE_LAG": "0",
            "SEARCHSYNC_LOAD_LIVE_WAIT_TIMEOUT_S": "0.05",
            "SEARCHSYNC_LOAD_POLL_INTERVAL_S": "0.001",
            **self.env,
        }
        return load_settings(env)

    @property
    def alias(self) -> str:
        return self.settings.alias(TYPE)

    def rows(self, n: int, revision: int = 2) -> None:
        for i in range(n):
            row = page(f"p{i:03d}", revision=revision)
            row["deleted_at"] = datetime(2026, 1, 1) if i == 4 else None  # one soft-deleted
            self.put(row)

    def put(self, row: Row) -> None:
        self.truth.put(row, table="wiki_page")

    def live_group_at(self, offset: int) -> None:
        self.topics.commits[(GROUP, (TOPIC, 0))] = offset
        self.topics.commits[(GROUP, (TOPIC, 1))] = 0

    async def init_alias(self, schema_version: int = 2) -> None:
        meta = {"projection_schema_version": schema_version}
        name = f"{self.alias}_v1"
        await self.es.admin.create_index(name, self.projector.mapping, meta=meta, alias=self.alias)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)

    async def load(self, **options: Any) -> LoadOutcome:
        loader = Loader(
            settings=self.settings,
            registry=default_registry(),
            index_admin=self.es.admin,
            writer=self.es,
            truth=self.truth,
            kafka=FakeAdmin(self.topics),
            state=self.state,
            progress=Progress(stream=self.out, label="load"),
            sleep=self.sleep,
        )
        return await loader.run(LoadOptions(TYPE, **options))


async def _versions(w: LoadWorld, ids: list[str]) -> dict[str, int | None]:
    return await w.es.get_versions(w.alias, ids)


async def test_two_parts_load_every_row_once_at_its_revision() -> None:
    w = LoadWorld()
    w.rows(10)
    w.live_group_at(3)
    await w.init_alias()
    first = await w.load(part=0, parts=2)
    second = await w.load(part=1, parts=2)
    assert first.ok and second.ok, (first.message, second.message)
    ids = sorted(w.truth.tables["wiki_page"])
    assert await _versions(w, ids) == dict.fromkeys(ids, 2)
    one, two = await w.state.parts(first.record.load_key if first.record else "")
    assert (one.low_id, one.high_id, two.low_id, two.high_id) == (None, "p004", "p004", None)
    assert one.rows_done + two.rows_done == 10 and one.rows_done == 5
    assert one.watermark == {(TOPIC, 0): 3, (TOPIC, 1): 0}
    assert second.parts_done == 2
    soft = w.es.get(w.alias, "p004")
    assert soft is not None and soft.body["is_deleted"] is True  # as the live path writes it


async def test_the_watermark_is_saved_before_the_first_chunk() -> None:
    w = LoadWorld()
    w.rows(4)
    w.live_group_at(3)
    await w.init_alias()
    await w.load()
    loading = [s for s in w.state.saves if s.status is Status.LOADING]
    assert loading[0].watermark is not None and loading[0].chunks_done == 0
    assert w.log[0] == "scan"  # the scan began after that save (the first save has no scan)


async def test_a_stopped_part_continues_after_its_last_finished_chunk() -> None:
    w = LoadWorld()
    w.rows(10)
    w.live_group_at(3)
    await w.init_alias()
    stopped = await w.load(stop_after_chunks=2)
    assert not stopped.ok and stopped.action == "interrupted"
    assert stopped.record.last_id == "p005"
    w.truth.scans.clear()
    resumed = await w.load()
    assert resumed.ok and resumed.resumed_after == "p005"
    assert w.truth.scans[0][0] == "p005"  # the finished rows are not read again
    assert resumed.rows_this_run == 4
    record = resumed.record
    assert (record.rows_done, record.runs, record.status) == (10, 2, Status.DONE)


async def test_a_finished_load_does_nothing_unless_again() -> None:
    w = LoadWorld()
    w.rows(5)
    w.live_group_at(3)
    await w.init_alias()
    await w.load()
    w.truth.scans.clear()
    again = await w.load()
    assert again.ok and again.action == "already_done"
    assert "--again" in again.message and w.truth.scans == []
    reloaded = await w.load(again=True)
    assert reloaded.ok and reloaded.rows_this_run == 5
    assert reloaded.record.runs == 2


async def test_a_newer_document_is_never_moved_backwards() -> None:
    w = LoadWorld()
    w.rows(5)
    w.live_group_at(3)
    await w.init_alias()
    newer = w.projector.project(page("p001", revision=7))
    await Sink(w.es).write([IndexOp.from_document(w.alias, newer)])
    outcome = await w.load()
    assert outcome.ok and outcome.record.rows_failed == 0
    assert (await _versions(w, ["p001", "p002"])) == {"p001": 7, "p002": 2}


async def test_the_load_waits_for_the_live_group_to_pass_its_watermark() -> None:
    w = LoadWorld()
    w.rows(4)
    w.live_group_at(1)  # behind the watermark (3)
    w.topics.members[GROUP] = ["member-1"]
    await w.init_alias()
    waiting = await w.load()
    assert not waiting.ok and waiting.action == "waiting"
    assert "searchsync run" in waiting.message
    assert waiting.record.status is Status.SCANNED
    w.live_group_at(3)
    w.truth.scans.clear()
    done = await w.load()
    assert done.ok and "past the watermark" in done.message
    assert w.truth.scans == []  # nothing is read again


async def test_a_live_group_that_never_committed_and_starts_earliest_will_pass() -> None:
    w = LoadWorld()
    w.rows(3)
    await w.init_alias()
    outcome = await w.load()
    assert outcome.ok and "has not committed yet" in outcome.message
    w2 = LoadWorld(env={"SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "latest"})
    w2.rows(3)
    await w2.init_alias()
    assert (await w2.load()).action == "waiting"


async def test_the_live_lag_guard_stops_the_load_resumably() -> None:
    w = LoadWorld(
        env={"SEARCHSYNC_LOAD_MAX_LIVE_LAG": "1", "SEARCHSYNC_LOAD_LAG_WAIT_TIMEOUT_S": "0"}
    )
    w.rows(3)
    w.live_group_at(0)  # lag 3
    w.topics.members[GROUP] = ["member-1"]
    await w.init_alias()
    outcome = await w.load()
    assert not outcome.ok and outcome.action == "interrupted"
    assert "load.max_live_lag" in outcome.message
    assert outcome.record is not None and outcome.record.status is Status.LOADING


async def test_a_group_with_no_member_has_no_live_traffic_to_guard() -> None:
    w = LoadWorld(
        env={"SEARCHSYNC_LOAD_MAX_LIVE_LAG": "1", "SEARCHSYNC_LOAD_LAG_WAIT_TIMEOUT_S": "0"}
    )
    w.rows(3)  # never committed, starts at the log start: "lag" 3, the whole topic
    await w.init_alias()
    outcome = await w.load()
    assert outcome.ok and outcome.rows_this_run == 3


async def test_refusals_name_the_fix() -> None:
    w = LoadWorld()
    w.rows(2)
    with pytest.raises(OperationRefused, match="index init --type wiki_page"):
        await w.load()
    await w.init_alias(schema_version=1)
    with pytest.raises(OperationRefused, match="projection schema 1"):
        await w.load()


async def test_a_dry_run_changes_nothing() -> None:
    w = LoadWorld()
    w.rows(6)
    await w.init_alias()
    planned = await w.load(dry_run=True, part=1, parts=2)
    assert planned.ok and planned.rows_in_scope == 3
    assert "nothing was changed" in planned.message
    assert w.state.records == {} and w.truth.scans == []
