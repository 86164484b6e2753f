"""The stray sweep (`searchsync.ops.repair.span.SpanScan.sweep`): documents without a
``sync_hash``, with one outside the key space, or with the key of another bucket are found in the
rotation that reads them, and healed through the outbox; a tombstone without a row is left alone,
and a sweep whose read fails, or a rotation that stopped, reports no stray (docs/design.md,
"Repair"; invariants 9 and 13)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline_fakes import page_row
from searchsync.ops.repair.load import LagGuard, Limits
from searchsync.ops.repair.model import FindingKind, RotationReport
from searchsync.ops.repair.reader import bucket_of_id, bucket_range
from searchsync.projection import sync_hash
from searchsync.types import HASH_SPACE
from test_repair_wheel import World

from tests.fakes.search_state import StoredDoc


def _keyless(w: World, i: str, sync_hash: Any = None) -> None:
    """The document of `i` without its ``sync_hash`` (or with `sync_hash` instead)."""
    body = {k: v for k, v in w.docs[i].body.items() if k != "sync_hash"}
    if sync_hash is not None:
        body["sync_hash"] = sync_hash
    w.docs[i] = StoredDoc(w.docs[i].version, body)


def _elsewhere(i: str) -> int:
    """A ``sync_hash`` in the bucket half the key space away from `i`'s own."""
    return (sync_hash("wiki_page", i) + HASH_SPACE // 2) % HASH_SPACE


def _doc_only(w: World, i: str, revision: int, *, deleted: bool = False) -> None:
    """A document of `i` at `revision` without a row."""
    row = page_row(i, revision, deleted_at=datetime(2026, 7, 1) if deleted else None)
    w.docs[i] = StoredDoc(revision, dict(w.projector.project(row).body))


def _found(report: RotationReport) -> dict[str, FindingKind]:
    return {f.id: f.kind for f in report.findings()}


def _strays(w: World) -> dict[str, FindingKind]:
    for n in range(20):
        w.page(f"ok{n:02d}")
    w.page("nokey")
    _keyless(w, "nokey")
    w.page("wrongkey")
    _keyless(w, "wrongkey", _elsewhere("wrongkey"))
    w.page("behind", 3)
    w.docs["behind"] = StoredDoc(2, dict(w.projector.project(page_row("behind", 2)).body))
    _keyless(w, "behind")
    _doc_only(w, "ghost", 4)
    _keyless(w, "ghost")
    _doc_only(w, "farghost", 2)
    _keyless(w, "farghost", -1)
    _doc_only(w, "wrongghost", 2)
    _keyless(w, "wrongghost", _elsewhere("wrongghost"))
    _doc_only(w, "gone", 6, deleted=True)  # a tombstone without a row: left alone
    _keyless(w, "gone")
    return {
        "nokey": FindingKind.STRAY,
        "wrongkey": FindingKind.STRAY,
        "behind": FindingKind.STALE,  # its bucket finds the row ahead of the document
        "ghost": FindingKind.ORPHAN,
        "farghost": FindingKind.ORPHAN,
        "wrongghost": FindingKind.ORPHAN,  # its bucket, read with the one its key names
    }


async def test_one_rotation_finds_every_stray_and_the_consumer_heals_them() -> None:
    w = World()
    expected = _strays(w)
    gone = w.docs["gone"]
    report = await w.wheel().rotation()
    assert _found(report) == expected and report.complete
    [sweep] = report.strays
    assert (sweep.outside, sweep.misplaced) == (5, 2)  # nokey, behind, ghost, farghost, gone
    assert sorted(i for _, i, _ in w.outbox.events) == sorted(expected)  # one REBUILD per id
    revisions = {i: r for _, i, r in w.outbox.events}
    assert (revisions["nokey"], revisions["wrongkey"], revisions["behind"]) == (2, 2, 3)
    assert w.outbox.floors == {
        ("wiki_page", "ghost"): 5,
        ("wiki_page", "farghost"): 3,
        ("wiki_page", "wrongghost"): 3,
    }
    await w.deliver()
    for i in ("nokey", "wrongkey", "behind"):
        assert w.docs[i].body == w.projector.project(w.truth.tables["wiki_page"][i]).body
    for i, version in [("ghost", 5), ("farghost", 3), ("wrongghost", 3)]:
        doc = w.docs[i]
        assert (doc.version, doc.body["is_deleted"]) == (version, True)
        assert doc.body["sync_hash"] == sync_hash("wiki_page", i)
    assert w.docs["gone"] == gone
    again = await w.wheel().rotation()
    assert sum(again.counts().values()) == 0 and again.strays[0].outside == 1


async def test_a_document_keyed_into_another_span_is_found_from_that_span() -> None:
    w = World(m=4)
    for n in range(12):
        w.page(f"ok{n:02d}")
    w.page("wrongkey")
    _keyless(w, "wrongkey", _elsewhere("wrongkey"))
    lo, hi = bucket_range(bucket_of_id("wiki_page", 4)("wrongkey"), 4)
    assert not lo <= w.docs["wrongkey"].body["sync_hash"] < hi
    report = await w.wheel(span_buckets=1).rotation()
    assert _found(report) == {"wrongkey": FindingKind.STRAY}
    assert report.strays[0].misplaced == 1 and report.strays[0].outside == 0
    await w.deliver()
    assert w.docs["wrongkey"].body["sync_hash"] == sync_hash("wiki_page", "wrongkey")


async def test_a_document_ahead_of_its_row_is_counted_not_healed() -> None:
    w = World()
    w.page("ahead")
    w.docs["ahead"] = StoredDoc(5, dict(w.projector.project(page_row("ahead", 5)).body))
    _keyless(w, "ahead")
    report = await w.wheel().rotation()
    assert report.findings() == [] and report.strays[0].ahead == 1 and w.outbox.events == []


async def test_a_dry_run_reports_strays_and_appends_nothing() -> None:
    w = World()
    expected = _strays(w)
    report = await w.wheel(dry_run=True).rotation()
    assert _found(report) == expected
    assert w.outbox.events == [] and w.outbox.floors == {}


async def test_a_stray_read_that_fails_reports_no_stray() -> None:
    w = World()
    expected = _strays(w)
    w.index_side.fail_strays = True
    report = await w.wheel().rotation()
    [sweep] = report.strays
    assert sweep.interrupted is not None and sweep.findings == [] and not report.complete
    in_buckets = {i: k for i, k in expected.items() if i in ("behind", "wrongghost")}
    assert _found(report) == in_buckets  # the stray orphans are not among them
    assert {i for _, i, _ in w.outbox.events} == set(in_buckets)


async def test_an_interrupted_rotation_reports_no_stray_orphan() -> None:
    w = World(m=1)
    _strays(w)
    w.index_side.fail_on_page = 2  # every bucket page after the first, and the stray read
    report = await w.wheel().rotation()
    assert report.interrupted == 1 and report.strays[0].interrupted is not None
    assert report.findings() == [] and w.outbox.events == []


async def test_a_stopped_rotation_sweeps_nothing() -> None:
    async def high() -> int:
        return 10

    w = World()
    _strays(w)
    limits = Limits(lag=LagGuard(high, max_lag=1, timeout_s=0.0, poll_s=1.0))
    report = await w.wheel(limits=limits).rotation()
    assert report.stopped is not None and report.strays == []
    assert w.outbox.events == [] and w.index_side.pages == 0
