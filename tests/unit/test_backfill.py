"""The backfill's pipeline on fakes: read-ahead, progress only after acknowledged writes and in
scan order, a scan failure after written chunks, and the tombstones of hard-deleted ids."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from searchsync.errors import ErrorCode, TransientError
from searchsync.examples import article
from searchsync.mysql.key_scope import KeyScope
from searchsync.ops.chunks import ChunkController
from searchsync.ops.rebuild.backfill import Backfill, ChunkDone
from searchsync.projection import Projector, Row, default_registry
from searchsync.search.sink import IndexOp, ItemResult, Sink

from tests.fakes.search_index import InMemoryIndex, PhysicalWriter
from tests.fakes.truth import FakeTruth
from tests.unit.rebuild_fakes import TYPE, RecordingTruth, page

TARGET = "wiki_page_v2"


class SlowWriter(PhysicalWriter):
    """The physical writer, taking a few turns of the event loop per bulk (as a request does)
    and logging when each bulk starts and ends."""

    def __init__(self, index: InMemoryIndex, log: list[str]) -> None:
        super().__init__(index)
        self.log = log
        self.ops: list[IndexOp] = []
        self.mgets = 0

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        self.log.append(f"write {ops[0].doc_id}")
        for _ in range(5):
            await asyncio.sleep(0)
        self.ops.extend(ops)
        results = await super().bulk_index(ops)
        self.log.append(f"written {ops[-1].doc_id}")
        return results

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        self.mgets += 1
        return await super().get_versions(alias, ids)


class FailingTruth(RecordingTruth):
    def __init__(self, log: list[str], fail_at: int) -> None:
        super().__init__(log)
        self.fail_at = fail_at

    async def scan(
        self,
        projector: Projector,
        after_id: str | None,
        limit: int,
        *,
        scope: KeyScope | None = None,
    ) -> list[Row]:
        if len(self.scans) + 1 == self.fail_at:
            raise TransientError(ErrorCode.MYSQL_UNAVAILABLE, "lost the connection")
        return await super().scan(projector, after_id, limit, scope=scope)


def setup(
    truth: RecordingTruth, log: list[str], rows: int = 9
) -> tuple[Backfill, SlowWriter, list[ChunkDone]]:
    for i in range(rows):
        truth.put(page(f"p{i:03d}", revision=2), table="wiki_page")
    index = InMemoryIndex()
    index.given_index(TARGET)
    writer = SlowWriter(index, log)
    done: list[ChunkDone] = []

    async def on_chunk(chunk: ChunkDone) -> None:
        log.append(f"done {chunk.last_id}")
        done.append(chunk)

    backfill = Backfill(
        truth=truth,
        sink=Sink(writer),
        projector=default_registry().get(TYPE),
        target_index=TARGET,
        chunks=ChunkController(minimum=3, maximum=3, target_s=1.0, current=3),
        on_chunk=on_chunk,
    )
    return backfill, writer, done


async def test_chunks_are_read_ahead_and_saved_only_after_their_writes_in_scan_order() -> None:
    log: list[str] = []
    truth = RecordingTruth(log)
    backfill, writer, done = setup(truth, log, rows=15)
    result = await backfill.run(after_id=None)

    assert result.complete and result.rows_done == 15 and result.last_id == "p014"
    lasts = ["p002", "p005", "p008", "p011", "p014"]
    assert [c.last_id for c in done] == lasts
    for last in lasts:  # progress only after the chunk's write is acknowledged
        assert log.index(f"written {last}") < log.index(f"done {last}")
    # the next chunks were scanned before the first write was acknowledged, a bounded few
    ahead = log[: log.index("written p002")].count("scan")
    assert 2 <= ahead <= 4
    assert [after for after, _ in truth.scans] == [None, *lasts]  # each chunk read once
    assert [op.doc_id for op in writer.ops] == [f"p{i:03d}" for i in range(15)]


async def test_a_scan_failure_keeps_the_progress_of_the_chunks_written_before_it() -> None:
    log: list[str] = []
    truth = FailingTruth(log, fail_at=3)
    backfill, writer, done = setup(truth, log)
    with pytest.raises(TransientError, match="lost the connection"):
        await backfill.run(after_id=None)
    assert [c.last_id for c in done] == ["p002", "p005"]
    assert len(writer.ops) == 6


async def test_stop_after_chunks_reads_no_chunk_beyond_them() -> None:
    log: list[str] = []
    truth = RecordingTruth(log)
    backfill, _, done = setup(truth, log)
    result = await backfill.run(after_id=None, stop_after_chunks=2)
    assert not result.complete and result.last_id == "p005"
    assert truth.scans == [(None, 3), ("p002", 3)]
    assert len(done) == 2


async def test_only_ids_without_a_newer_row_get_a_tombstone_at_their_floor() -> None:
    log: list[str] = []
    truth = RecordingTruth(log)
    backfill, writer, _ = setup(truth, log, rows=3)
    truth.put_floor(TYPE, "gone", 4)  # no row: a tombstone
    truth.put_floor(TYPE, "p001", 1)  # created again at revision 2: its row outranks it
    truth.put_floor(TYPE, "p002", 7)  # a row below its floor (not expected): the floor wins
    result = await backfill.run(after_id=None)

    assert result.tombstones == 2
    tombstones = [op for op in writer.ops[3:]]
    assert [(op.doc_id, op.version) for op in tombstones] == [("gone", 4), ("p002", 7)]
    assert writer.mgets == 0  # nothing refused, so no 409 to confirm by a real-time read


async def test_a_chunk_reads_each_child_and_lookup_table_once_and_writes_their_projection() -> None:
    """The example article: every chunk of three costs one read of article_tag and one of
    author (the truth's scan), and each document is the projection of its row with them."""
    truth = FakeTruth()
    projector = article.projector()
    truth.put({"id": "u1", "name": "作者", "revision": 1}, table="author")
    for i in range(9):
        truth.put({"id": f"a{i}", "title": "t", "body": "b", "author_id": "u1" if i % 2 else None,
                   "revision": 2, "deleted_at": None}, table="article")  # fmt: skip
        for position in range(2):
            tag = {"article_id": f"a{i}", "tag": f"t{i}{position}", "position": position}
            truth.put_child(tag, table="article_tag")
    index = InMemoryIndex()
    index.given_index("article_v2")
    backfill = Backfill(
        truth=truth,
        sink=Sink(PhysicalWriter(index)),
        projector=projector,
        target_index="article_v2",
        chunks=ChunkController(minimum=3, maximum=3, target_s=1.0, current=3),
        on_chunk=lambda chunk: asyncio.sleep(0),
    )
    result = await backfill.run(after_id=None)
    assert result.complete and result.rows_done == 9 and result.chunks == 3
    assert truth.relation_reads == ["article_tag", "author"] * 3
    docs = index.indices["article_v2"].docs
    for i in range(9):
        row = (await truth.rows_by_id(projector, [f"a{i}"]))[f"a{i}"]
        assert docs[f"a{i}"].body == projector.project(row).body
    assert docs["a1"].body["tags"] == ["t10", "t11"] and docs["a1"].body["author_name"] == "作者"
