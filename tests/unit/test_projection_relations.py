"""Children and lookups of a projector: declarations, validation and how rows are attached."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.examples import article
from searchsync.projection import Child, Lookup, Projector, attach_steps, child_order

from tests.fakes.truth import FakeTruth, attach

TAGS = Child(
    "tags", "article_tag", key="article_id", columns=("article_id", "tag", "position"),
    order_by=("position",),
)  # fmt: skip
AUTHOR = Lookup("author", "author", via="author_id", columns=("id", "name"))


def projector(**overrides: Any) -> Projector:
    fields: dict[str, Any] = {
        "aggregate_type": "article",
        "schema_version": 1,
        "table": "article",
        "columns": ("id", "revision", "author_id", "deleted_at"),
        "build": lambda row: {"is_deleted": False},
        "mapping": article.projector().mapping,
        "children": (TAGS,),
        "lookups": (AUTHOR,),
    }
    fields.update(overrides)
    return Projector(**fields)


def test_a_projector_declares_children_and_lookups() -> None:
    p = projector()
    assert p.children == (TAGS,) and p.lookups == (AUTHOR,)
    assert projector(children=(), lookups=()).children == ()
    assert article.projector().children == (article.TAGS,)
    assert article.projector().lookups == (article.AUTHOR,)
    assert article.AUTHOR.aggregate_type == "author"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Child("t", "x`y", key="k", columns=("k",), order_by=()), "identifier"),
        (lambda: Child("t", "tag", key="k", columns=("a",), order_by=()), "its key"),
        (lambda: Child("t", "tag", key="k", columns=("k", "k"), order_by=()), "twice"),
        (lambda: Child("t", "tag", key="k", columns=("k",), order_by=("z",)), "order_by"),
        (lambda: Child("t", "tag", key="k", columns=[" k"], order_by=()), "tuple"),
        (lambda: Lookup("a", "author", via="author_id", columns=("name",)), "'id'"),
        (lambda: Lookup("a", "author", via="a b", columns=("id",)), "identifier"),
        (lambda: Lookup("a", "t", via="v", columns=("id",), aggregate_type="Au"), "aggregate_type"),
        (lambda: projector(lookups=(Lookup("author", "a", via="nope", columns=("id",)),)), "via"),
        (
            lambda: projector(children=(Child("id", "t", key="k", columns=("k",), order_by=()),)),
            "named like columns",
        ),
        (
            lambda: projector(lookups=(Lookup("tags", "a", via="author_id", columns=("id",)),)),
            "twice",
        ),
        (lambda: projector(children=[TAGS]), "tuple of Child"),
        (lambda: projector(lookups=(TAGS,)), "tuple of Lookup"),
    ],
)
def test_bad_declarations_are_refused_naming_what_is_wrong(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_attach_puts_children_in_order_and_the_looked_up_row_on_each_root() -> None:
    roots: list[dict[str, Any]] = [
        {"id": "a1", "author_id": "u1"},
        {"id": "a2", "author_id": None},
        {"id": "a3", "author_id": "gone"},
    ]
    tags = [
        {"article_id": "a1", "tag": "z", "position": 1},
        {"article_id": "a1", "tag": "b", "position": 0},
        {"article_id": "a1", "tag": "a", "position": 1},
    ]
    attach(roots, [(TAGS, tags)], [(AUTHOR, [{"id": "u1", "name": "N"}])])
    assert [t["tag"] for t in roots[0]["tags"]] == ["b", "a", "z"]
    assert roots[0]["author"] == {"id": "u1", "name": "N"}
    assert roots[1]["tags"] == [] and roots[1]["author"] is None
    assert roots[2]["author"] is None


rows_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "article_id": st.sampled_from(["a1", "a2"]),
            "tag": st.text(st.sampled_from("ab\u00e9"), min_size=1, max_size=3),
            "position": st.none() | st.integers(0, 3),
        }
    ),
    max_size=12,
)


@given(rows_strategy, st.randoms(use_true_random=False))
def test_the_order_rows_are_read_in_never_changes_what_build_gets(
    rows: list[dict[str, Any]], rnd: random.Random
) -> None:
    shuffled = rnd.sample(rows, len(rows))
    assert child_order(TAGS, rows) == child_order(TAGS, shuffled)
    first: list[dict[str, Any]] = [{"id": "a1", "author_id": None}]
    second: list[dict[str, Any]] = [{"id": "a1", "author_id": None}]
    attach(first, [(TAGS, rows)], [(AUTHOR, [])])
    attach(second, [(TAGS, shuffled)], [(AUTHOR, [])])
    assert first == second


@given(rows_strategy)
def test_child_order_is_by_order_by_then_every_column_null_first(
    rows: list[dict[str, Any]],
) -> None:
    """The order `child_order` gives (its values compared directly while no NULL meets a value)
    is the one its definition says: order_by, then the other columns, NULL before any value."""

    def null_first(row: dict[str, Any]) -> tuple[tuple[int, Any], ...]:
        keys = ("position", "article_id", "tag")  # TAGS: order_by, then the other columns
        return tuple((0, 0) if row[c] is None else (1, row[c]) for c in keys)

    assert child_order(TAGS, rows) == sorted(rows, key=null_first)


@given(rows_strategy)
def test_attach_in_steps_yields_between_slices_and_attaches_the_same(
    rows: list[dict[str, Any]],
) -> None:
    whole = [{"id": "a1", "author_id": "u1"}, {"id": "a2", "author_id": None}, {"id": "a3"}]
    stepped = [dict(r) for r in whole]
    attach(whole, [(TAGS, rows)], [(AUTHOR, [{"id": "u1", "name": "n"}])])
    steps = attach_steps(stepped, [(TAGS, rows)], [(AUTHOR, [{"id": "u1", "name": "n"}])], step=2)
    assert sum(1 for _ in steps) == 1 + 2  # grouped, then two slices of roots
    assert stepped == whole


tag_lists = st.lists(
    st.tuples(
        st.text(st.sampled_from("ab\u00e9e\u0301"), min_size=1, max_size=3), st.integers(0, 3)
    ),
    max_size=8,
    unique_by=lambda t: t[0],
)


@given(tag_lists, st.randoms(use_true_random=False))
async def test_the_order_the_truth_returns_child_rows_in_never_changes_the_bytes(
    tags: list[tuple[str, int]], rnd: random.Random
) -> None:
    """The same article rows, the tag rows stored (so returned) in two orders: the same
    document, byte for byte, and the same projection_hash (invariant 6)."""
    p = article.projector()
    docs = []
    for order in (tags, rnd.sample(tags, len(tags))):
        truth = FakeTruth()
        truth.put({"id": "u1", "name": "n\u0303", "revision": 1}, table="author")
        truth.put({"id": "a1", "title": "t", "body": "b", "author_id": "u1", "revision": 4,
                   "deleted_at": None}, table="article")  # fmt: skip
        for tag, position in order:
            row = {"article_id": "a1", "tag": tag, "position": position}
            truth.put_child(row, table="article_tag")
        truth.put_child({"article_id": "a2", "tag": "x", "position": 0}, table="article_tag")
        docs.append(p.project((await truth.rows_by_id(p, ["a1"]))["a1"]))
    assert docs[0].encoded == docs[1].encoded
    assert docs[0].projection_hash == docs[1].projection_hash
    assert docs[0].body["author_name"] == "\u00f1"
