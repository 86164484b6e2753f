"""The article projector's `canonical_fields` promise (searchsync/projection/_registry.py):
`build` returns its fields in canonical form already, so `Projector.project` may skip the
normalizing walk. Checked over arbitrary rows, strings that are not NFC included."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from searchsync.examples import article

from tests.unit.canonical_promise import assert_walk_skippable, canonical_build

# Decomposed and composed forms, a leading combining mark, CJK, ASCII and the empty string.
_PIECES = ["e\u0301", "é", "\u0301", "\u212b", "Å", "标签", "a", "Z", "0", " "]
pieces = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
text = pieces | st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
tag_rows = st.lists(
    st.fixed_dictionaries(
        {"article_id": st.just("a1"), "tag": text | st.none(), "position": st.integers(0, 9)}
    ),
    max_size=5,
)
rows = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["a1", "文章", "x"]),
        "title": text | st.none(),
        "body": text,
        "author_id": st.none() | st.just("u1"),
        "revision": st.integers(1, 2**63 - 1),
        "deleted_at": st.none() | st.just(datetime(2026, 7, 19, 10, 0, 0, 123456)),
        "tags": tag_rows,
        "author": st.none() | st.fixed_dictionaries({"id": st.just("u1"), "name": text}),
    }
)

PROMISED = article.projector()
WALKED = dataclasses.replace(PROMISED, canonical_fields=False)


def test_article_makes_the_promise() -> None:
    assert PROMISED.canonical_fields is True
    assert WALKED.canonical_fields is False


@given(rows)
def test_build_returns_fields_that_normalizing_leaves_unchanged(row: dict[str, Any]) -> None:
    canonical_build(article.build, row)


@given(rows)
def test_skipping_the_walk_gives_the_same_document(row: dict[str, Any]) -> None:
    assert_walk_skippable(PROMISED, WALKED, row)
