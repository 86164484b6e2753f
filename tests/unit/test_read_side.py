"""The read side on the in-memory index: waiting for a revision (indexed, searchable, bounded by
a timeout with backoff) and a search verified against the truth."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from prometheus_client import generate_latest
from searchsync.projection import wiki_page
from searchsync.read import (
    Backoff,
    Freshness,
    ReadMetrics,
    Until,
    WaitResult,
    verified_search,
    wait_for_revision,
)
from searchsync.search.sink import IndexOp

from tests.fakes.search_index import InMemoryIndex
from tests.fakes.truth import FakeTruth
from tests.unit.pipeline_fakes import page_row

ALIAS = "kb_wiki_page"
PROJECTOR = wiki_page.projector()
DELETED = {"deleted_at": datetime(2026, 1, 2, 3, 4, 5)}


class Clock:
    """A clock that only moves when the wait sleeps; records each pause."""

    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


async def index_with(*rows: dict[str, Any]) -> InMemoryIndex:
    es = InMemoryIndex()
    es.given_index(f"{ALIAS}_v1", PROJECTOR.mapping)
    es.given_alias(ALIAS, f"{ALIAS}_v1")
    for row in rows:
        await put(es, row)
    return es


async def put(es: InMemoryIndex, row: dict[str, Any]) -> None:
    doc = PROJECTOR.project(row)
    [result] = await es.bulk_index([IndexOp(ALIAS, doc.doc_id, doc.source_revision, doc.encoded)])
    assert result.status in (200, 201)


async def wait(es: InMemoryIndex, clock: Clock, revision: int, until: Until) -> WaitResult:
    return await wait_for_revision(
        es,
        ALIAS,
        "p1",
        revision,
        until=until,
        timeout_s=1.0,
        backoff=Backoff(first_s=0.1, factor=2.0, max_s=0.3),
        clock=clock,
        sleep=clock.sleep,
    )


@pytest.mark.parametrize("until", list(Until))
async def test_a_wait_times_out_with_backoff_and_says_what_it_saw(until: Until) -> None:
    es, clock = await index_with(page_row("p1", 1)), Clock()
    result = await wait(es, clock, 2, until)
    assert not result.reached and (result.seen, result.polls) == (1, 6)
    assert clock.pauses == pytest.approx([0.1, 0.2, 0.3, 0.3, 0.1])  # the last one: what is left
    assert "timed out" in result.message and "saw revision 1" in result.message
    assert result.as_json()["seen_revision"] == 1


@pytest.mark.parametrize("until", list(Until))
async def test_the_revision_or_a_newer_one_is_reached_at_once(until: Until) -> None:
    es, clock = await index_with(page_row("p1", 1), page_row("p1", 3)), Clock()
    for revision in (2, 3):  # 3 superseded 2: reached too
        result = await wait(es, clock, revision, until)
        assert result.reached and (result.seen, result.polls) == (3, 1)
        # a get by id reads no source: only a search says whether it is a tombstone
        assert result.deleted is (None if until is Until.INDEXED else False)
    assert clock.pauses == []


async def test_a_delete_is_searchable_when_its_tombstone_is() -> None:
    es, clock = await index_with(page_row("p1", 1)), Clock()
    assert not (await wait(es, clock, 2, Until.SEARCHABLE)).reached
    await put(es, page_row("p1", 2, **DELETED))
    result = await wait(es, clock, 2, Until.SEARCHABLE)
    assert result.reached and (result.seen, result.deleted) == (2, True)
    assert "a tombstone" in result.message
    assert (await wait(es, clock, 3, Until.SEARCHABLE)).seen == 2  # and no later revision


async def test_a_wait_for_a_document_never_written_sees_none() -> None:
    result = await wait(await index_with(), Clock(), 1, Until.SEARCHABLE)
    assert not result.reached and result.seen is None and "no document" in result.message


async def test_verified_search_marks_fresh_stale_and_gone_and_counts_them() -> None:
    rows = {i: page_row(i, 1) for i in ("fresh", "stale", "deleted", "missing")}
    es = await index_with(*rows.values())
    truth = FakeTruth()
    truth.put(rows["fresh"], table=PROJECTOR.table)
    truth.put(page_row("stale", 2, title="newer"), table=PROJECTOR.table)
    truth.put(page_row("deleted", 2, **DELETED), table=PROJECTOR.table)
    metrics = ReadMetrics()
    for replace in (False, True):
        result = await verified_search(
            es,
            truth,
            PROJECTOR,
            alias=ALIAS,
            query={"match_all": {}},
            query_type="admin_list",
            replace_stale=replace,
            metrics=metrics,
        )
        assert (result.fresh, result.stale, result.gone, result.replaced) == (1, 1, 2, replace)
        assert [(h.doc_id, h.freshness) for h in result.hits] == [
            ("fresh", Freshness.FRESH),
            ("stale", Freshness.STALE),
        ]
        stale = result.hits[1]
        assert (stale.indexed_revision, stale.row_revision, stale.replaced) == (1, 2, replace)
        assert stale.source["title"] == ("newer" if replace else "title stale r1")
    assert truth.calls == [(("deleted", "fresh", "missing", "stale"), True)] * 2  # one batch
    text = generate_latest(metrics.registry).decode()
    assert (
        'searchsync_verified_search_drift_hits_total{query_type="admin_list",state="gone"} 4.0'
        in text
    )
    assert (
        'searchsync_verified_search_drift_hits_total{query_type="admin_list",state="stale"} 2.0'
        in text
    )


async def test_verified_search_reads_the_read_alias() -> None:
    es = await index_with(page_row("a", 1), page_row("b", 2, **DELETED))
    truth = FakeTruth()
    truth.put(page_row("a", 1), table=PROJECTOR.table)
    result = await verified_search(
        es, truth, PROJECTOR, alias=ALIAS, query={"match_all": {}}, query_type="q"
    )
    assert [h.doc_id for h in result.hits] == ["a"] and result.gone == 0
