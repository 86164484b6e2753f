"""The fan-out schedule's article checker (tests/faults/fanout_check.py) is written from the
example's contract, not from its projector. Here the two are held side by side: for any article
row, its tags and its author, the checker's expected fields and hash are exactly what the
article projector writes, so "divergent = 0" means "equal to the contract"."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from searchsync.examples import article
from searchsync.projection import projected_fields

from tests.faults import fanout_check
from tests.faults.checker import canonical

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)


@given(
    text,
    text,
    st.lists(text.filter(bool), max_size=5),
    st.none() | text,
    st.integers(1, 2**40),
    st.none() | st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
)
def test_the_article_checker_expects_what_the_projector_writes(
    title: str,
    body: str,
    tags: list[str],
    author_name: str | None,
    revision: int,
    deleted_at: datetime | None,
) -> None:
    author_id = None if author_name is None else "author-1"
    row: dict[str, Any] = {
        "id": "article-1",
        "title": title,
        "body": body,
        "author_id": author_id,
        "revision": revision,
        "deleted_at": deleted_at,
        "tags": [{"article_id": "article-1", "tag": t, "position": i} for i, t in enumerate(tags)],
        "author": None if author_name is None else {"id": author_id, "name": author_name},
    }
    doc = article.projector().project(row)
    want = fanout_check.expected_article(row, tags, author_name)
    assert projected_fields(doc.body) == {**want, "projection_hash": doc.projection_hash}
    assert doc.projection_hash == hashlib.sha256(canonical(want)).hexdigest()
