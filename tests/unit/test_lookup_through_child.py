"""A lookup through a child table (``Lookup(through=...)``): its declaration, how the looked-up
rows are attached to each child row, the fake truth's reads, and the fan-out's route through the
child (the fake store's pages and the worker)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.config import FanoutSettings
from searchsync.mysql.fanout import FanoutTarget
from searchsync.ops.fanout_worker import FanoutWorker
from searchsync.projection import Child, Lookup, ProjectorRegistry, lookup_keys
from searchsync.projection.references import dependents, routes

from tests import catalog
from tests.fakes.fanout import FakeFanout, drain
from tests.fakes.truth import FakeTruth, attach

CATEGORIES, CATEGORY = catalog.CATEGORIES, catalog.CATEGORY


def through(**overrides: Any) -> Lookup:
    fields: dict[str, Any] = {
        "name": "category",
        "table": "xc_category",
        "via": "category_id",
        "columns": ("id", "name"),
        "through": "categories",
    }
    fields.update(overrides)
    return Lookup(**fields)


def test_a_lookup_through_a_child_reads_a_column_of_that_child() -> None:
    p = catalog.projector()
    assert p.lookups == (CATEGORY,) and CATEGORY.through == "categories"
    assert "category_id" not in p.columns  # a column of the child, not of the root
    assert routes(_registry()) == (("xc_category", "xc_product", "category"),)
    assert dependents(_registry(), "xc_category") == ((p, CATEGORY),)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"through": "tags"}, "'tags' is no child"),
        ({"through": "a b"}, "identifier"),
        ({"via": "title"}, "not one of the columns of child 'categories'"),
        ({"name": "position"}, "named like a column of child 'categories'"),
        ({"name": "categories"}, "twice"),
        ({"name": "title"}, "named like columns"),
        ({"through": None}, "not one of the root's columns"),
    ],
)
def test_a_bad_lookup_through_a_child_is_refused_naming_what_is_wrong(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(catalog.projector(), lookups=(through(**overrides),))


def test_attach_gives_each_child_row_its_looked_up_row_in_child_order() -> None:
    roots: list[dict[str, Any]] = [{"id": "p1"}, {"id": "p2"}, {"id": "p3"}]
    rows = [
        {"product_id": "p1", "category_id": "c2", "position": 1},
        {"product_id": "p1", "category_id": "c1", "position": 0},
        {"product_id": "p2", "category_id": "gone", "position": 0},
        {"product_id": "p1", "category_id": "c1", "position": 2},
    ]
    found = [{"id": "c1", "name": "One"}, {"id": "c2", "name": "Two"}]
    assert lookup_keys(CATEGORY, roots, [(CATEGORIES, rows)]) == ["c2", "c1", "gone"]
    attach(roots, [(CATEGORIES, rows)], [(CATEGORY, found)])
    p1 = roots[0]["categories"]
    assert [(c["position"], c["category"]) for c in p1] == [
        (0, found[0]),
        (1, found[1]),
        (2, found[0]),
    ]
    assert roots[1]["categories"][0]["category"] is None  # no such category
    assert roots[2]["categories"] == [] and "category" not in roots[0]
    assert "category" not in rows[0]  # the rows read are not changed: copies get the lookup


def test_a_null_via_in_a_child_row_looks_nothing_up() -> None:
    child = Child("refs", "r", key="pid", columns=("pid", "cid"), order_by=())
    lookup = Lookup("c", "c", via="cid", columns=("id",), through="refs")
    roots: list[dict[str, Any]] = [{"id": "p"}]
    rows = [{"pid": "p", "cid": None}]
    assert lookup_keys(lookup, roots, [(child, rows)]) == []
    attach(roots, [(child, rows)], [(lookup, [{"id": "None"}])])
    assert roots[0]["refs"] == [{"pid": "p", "cid": None, "c": None}]


links = st.lists(
    st.tuples(st.sampled_from(["p1", "p2"]), st.sampled_from(["c1", "c2", "c3", "cx"])),
    max_size=10,
)


@given(links, st.randoms(use_true_random=False))
async def test_the_order_child_and_looked_up_rows_are_read_in_never_changes_the_bytes(
    pairs: list[tuple[str, str]], rnd: random.Random
) -> None:
    """The same product, category and link rows, stored (so returned) in two orders: the same
    documents, byte for byte (invariant 6), and one read per table for the batch."""
    p = catalog.projector()
    links = [(pid, cid, n) for n, (pid, cid) in enumerate(pairs)]
    names = {"c1": "e\u0301t\u00e9", "c2": "二", "c3": "three"}
    encoded = []
    for order in (links, rnd.sample(links, len(links))):
        truth = FakeTruth()
        for cid, name in rnd.sample(sorted(names.items()), len(names)):
            truth.put({"id": cid, "name": name, "revision": 1}, table="xc_category")
        for pid in ("p1", "p2"):
            truth.put({"id": pid, "title": pid, "revision": 2, "deleted_at": None},
                      table="xc_product")  # fmt: skip
        for pid, cid, position in order:
            row = {"product_id": pid, "category_id": cid, "position": position}
            truth.put_child(row, table="xc_product_category")
        rows = await truth.rows_by_id(p, ["p1", "p2"])
        assert truth.relation_reads == ["xc_product_category", "xc_category"]
        encoded.append([p.project(rows[i]).encoded for i in ("p1", "p2")])
        want = [names.get(c, f"[{c}]") for pid, c, _ in links if pid == "p1"]
        assert p.project(rows["p1"]).body["categories"] == [
            n if n != "e\u0301t\u00e9" else "\u00e9t\u00e9" for n in want
        ]
    assert encoded[0] == encoded[1]


@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.sampled_from(["cA", "cB"]), st.integers(0, 3)),
        max_size=40,
    ),
    st.sets(st.integers(0, 30)),
    st.integers(1, 7),
)
async def test_dependents_through_a_child_are_paged_by_id_each_once(
    links: list[tuple[int, str, int]], roots: set[int], page: int
) -> None:
    """Child rows (duplicates, orphans whose root is gone, other categories): paging from the
    start to an empty page gives every existing root that lists the category, once, in id
    order, at its revision."""
    store = FakeFanout()
    store.tables["xc_product"] = {f"p{n:02}": {"id": f"p{n:02}", "revision": n} for n in roots}
    store.child_tables["xc_product_category"] = [
        {"product_id": f"p{n:02}", "category_id": c, "position": pos} for n, c, pos in links
    ]
    got, after = [], ""
    while found := await store.dependents(
        "xc_product", "category_id", "cA", after, page, through=CATEGORIES
    ):
        assert len(found) <= page and [d.id for d in found] == sorted(d.id for d in found)
        got.extend(found)
        after = found[-1].id
    want = sorted({n for n, c, _ in links if c == "cA" and n in roots})
    assert [(d.id, d.revision) for d in got] == [(f"p{n:02}", n) for n in want]


def _registry() -> ProjectorRegistry:
    r = ProjectorRegistry()
    r.register(catalog.projector())
    return r


def test_the_worker_finds_the_dependents_through_the_child_table() -> None:
    store = FakeFanout()
    store.tables["xc_product"] = {
        f"p{n}": {"id": f"p{n}", "revision": 5, "category_id": "c1"} for n in range(4)
    }  # a root column named like the child's via must not be read
    store.child_tables["xc_product_category"] = [
        {"product_id": "p1", "category_id": "c1", "position": 0},
        {"product_id": "p1", "category_id": "c1", "position": 1},
        {"product_id": "p2", "category_id": "c2", "position": 0},
        {"product_id": "p3", "category_id": "c1", "position": 3},
    ]

    async def run() -> None:
        await store.record([FanoutTarget("xc_category", "c1", "xc_product", "category", 2)])
        worker = FanoutWorker(store, _registry(), FanoutSettings(appends_per_s=1e6, page_size=1))
        assert await drain(worker) == 1

    asyncio.run(run())
    assert store.events == [("xc_product", "p1", 5), ("xc_product", "p3", 5)]
