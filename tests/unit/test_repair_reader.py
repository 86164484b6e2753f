"""The repair wheel's span reads (`searchsync.ops.repair.reader`): adjacent buckets merged into
one key range, every entry in its own bucket, content re-read by id, and a failure on either
side failing the whole span (docs/design.md, "Repair")."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_fakes import PageTruth, page_row
from searchsync.ops.chunks import ChunkController
from searchsync.ops.repair.load import Limits
from searchsync.ops.repair.reader import SpanReader, bucket_of_id, bucket_range, key_ranges
from searchsync.projection import default_registry, sync_hash

from tests.fakes.search_index import InMemoryIndex
from tests.fakes.search_state import StoredDoc

PROJECTOR = default_registry().get("wiki_page")


@given(t=st.sampled_from(["wiki_page", "note"]), i=st.text(max_size=30), m=st.integers(1, 5000))
def test_bucket_of_id_is_the_bucket_whose_range_holds_the_key(t: str, i: str, m: int) -> None:
    b = bucket_of_id(t, m)(i)
    lo, hi = bucket_range(b, m)
    assert 0 <= b < m and lo <= sync_hash(t, i) < hi


@given(m=st.integers(1, 200), data=st.data())
def test_key_ranges_cover_exactly_the_buckets_and_merge_neighbours(
    m: int, data: st.DataObject
) -> None:
    buckets = data.draw(st.sets(st.integers(0, m - 1), min_size=1))
    ranges = key_ranges(buckets, m)
    for b in range(m):
        lo, hi = bucket_range(b, m)
        inside = [r for r in ranges if r[0] <= lo and hi <= r[1]]
        assert len(inside) == (1 if b in buckets else 0)
        assert all(hi <= r[0] or r[1] <= lo for r in ranges if r not in inside)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(ranges))  # never adjacent


def _world(n: int) -> tuple[PageTruth, InMemoryIndex]:
    truth, index = PageTruth(), InMemoryIndex()
    index.given_index("wiki_page_v1", PROJECTOR.mapping)
    index.given_alias("wiki_page", "wiki_page_v1")
    for k in range(n):
        row = page_row(f"p{k:03d}", 2)
        truth.put_page(row)
        if k % 7 != 3:  # some rows have no document
            index.indices["wiki_page_v1"].docs[row["id"]] = StoredDoc(
                2, dict(PROJECTOR.project(row).body)
            )
    return truth, index


def _reader(truth: PageTruth, index: InMemoryIndex, page: int) -> tuple[SpanReader, Any]:
    index_side = index
    reader = SpanReader(
        truth,
        index_side,
        Limits(),
        ChunkController(minimum=2, maximum=page, target_s=1.0, current=2),
        ChunkController(minimum=2, maximum=page, target_s=1.0, current=2),
        ChunkController(minimum=2, maximum=page, target_s=1.0, current=2),
    )
    return reader, index_side


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 12),
    n=st.integers(0, 60),
    page=st.integers(2, 9),
    data=st.data(),
)
def test_a_span_read_gives_each_bucket_exactly_its_entries(
    m: int, n: int, page: int, data: st.DataObject
) -> None:
    buckets = sorted(data.draw(st.sets(st.integers(0, m - 1), min_size=1)))
    content = data.draw(st.sets(st.sampled_from(buckets)))
    truth, index = _world(n)
    reader, _ = _reader(truth, index, page)
    got = asyncio.run(reader.read(PROJECTOR, "wiki_page", m, buckets, content))
    docs = index.indices["wiki_page_v1"].docs
    assert sorted(got) == buckets
    for b, entries in got.items():
        mine = {
            i for i in truth.tables.get("wiki_page", {}) if bucket_of_id("wiki_page", m)(i) == b
        }
        assert set(entries.rows) == mine
        assert set(entries.docs) == mine & set(docs)
        heavy = b in content
        assert all((e.row is not None) == heavy for e in entries.rows.values())
        assert all((d.source is not None) == heavy for d in entries.docs.values())
        assert all(d.version == 2 and d.schema_version for d in entries.docs.values())


async def test_a_failure_on_one_side_fails_the_whole_span() -> None:
    truth, index = _world(40)
    reader, index_side = _reader(truth, index, 3)
    index_side.fail_on_page = 2
    with pytest.raises(ExceptionGroup) as caught:
        await reader.read(PROJECTOR, "wiki_page", 4, [0, 1, 2, 3], {1})
    assert caught.group_contains(ConnectionError)
