"""The wheel's compare (`searchsync.ops.repair.compare`): the same findings whatever the order of
its entries, and a content check that flags exactly the bodies whose hash no longer holds."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from pipeline_fakes import page_row
from searchsync.mysql.truth import TruthEntry
from searchsync.mysql.truth_buckets import entry_of_row
from searchsync.ops.repair.compare import compare
from searchsync.ops.repair.model import FindingKind, IndexEntry, entry_of
from searchsync.projection import content_hash, default_registry
from searchsync.search.port import StoredDocument

PROJECTOR = default_registry().get("wiki_page")


@given(
    title=st.one_of(st.none(), st.text(max_size=10)),
    stored_hash=st.sampled_from(["kept", "recomputed", "other"]),
    row_revision=st.integers(1, 3),
)
def test_content_drift_is_flagged_exactly_when_the_hash_no_longer_holds(
    title: str | None, stored_hash: str, row_revision: int
) -> None:
    row = page_row("p1", row_revision)
    body = dict(PROJECTOR.project(row).body)
    if title is not None:
        body["title"] = title  # an edit made in Elasticsearch
    if stored_hash == "recomputed":  # ... that also rewrote the hash to match
        body["projection_hash"] = content_hash(body)
    elif stored_hash == "other":
        body["projection_hash"] = "0" * 64
    doc = entry_of(StoredDocument("p1", row_revision, body), content=True)
    found = compare(
        PROJECTOR,
        {"p1": entry_of_row(row, content=True)},
        {"p1": doc},
        content=True,
        complete=True,
    )
    fresh = PROJECTOR.project(row).projection_hash
    drifted = content_hash(body) != doc.projection_hash or fresh != doc.projection_hash
    assert [f.kind for f in found] == ([FindingKind.CONTENT_DRIFT] if drifted else [])


def _entries(
    spec: list[tuple[int, bool, bool, int]],
) -> tuple[dict[str, TruthEntry], dict[str, IndexEntry]]:
    rows: dict[str, TruthEntry] = {}
    docs: dict[str, IndexEntry] = {}
    for n, (kind, deleted, doc_deleted, schema) in enumerate(spec):
        i = f"p{n:02d}"
        if kind != 1:
            rows[i] = TruthEntry(i, 2, deleted)
        if kind != 2:
            docs[i] = IndexEntry(i, 1 + kind % 3, None, schema, doc_deleted)
    return rows, docs


@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.booleans(), st.booleans(), st.integers(0, 3)), max_size=20
    ),
    st.randoms(),
    st.booleans(),
)
def test_findings_do_not_depend_on_the_order_of_the_entries(
    spec: list[tuple[int, bool, bool, int]], rnd: random.Random, complete: bool
) -> None:
    rows, docs = _entries(spec)
    shuffled_rows = list(rows.items())
    shuffled_docs = list(docs.items())
    rnd.shuffle(shuffled_rows)
    rnd.shuffle(shuffled_docs)
    first = compare(PROJECTOR, rows, docs, content=False, complete=complete)
    again = compare(
        PROJECTOR, dict(shuffled_rows), dict(shuffled_docs), content=False, complete=complete
    )
    assert first == again
    assert [f.id for f in first] == sorted(f.id for f in first)
    assert complete or not any(f.kind in (FindingKind.MISSING, FindingKind.ORPHAN) for f in first)
