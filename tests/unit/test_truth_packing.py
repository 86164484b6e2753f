"""Which child tables the truth reads packed: only those whose values are ints and strings, and
only once a packed read gave the same rows as a plain one (searchsync.mysql.truth_relations)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from searchsync.mysql.truth_relations import _may_pack, _same
from searchsync.projection import Child

TAGS = Child("tags", "article_tag", key="article_id", columns=("article_id", "tag", "position"),
             order_by=("position",))  # fmt: skip


def tag(**overrides: Any) -> dict[str, Any]:
    return {"article_id": "a1", "tag": "x", "position": 0, **overrides}


@pytest.mark.parametrize(
    ("rows", "packable"),
    [
        ([tag(), tag(tag="y", position=None)], True),
        ([tag(position=None)], False),  # a column never seen with a value: not known yet
        ([], False),
        ([tag(position=datetime(2026, 1, 1))], False),
        ([tag(position=Decimal("1.5"))], False),
        ([tag(position=1.5)], False),
        ([tag(tag=b"x")], False),
    ],
)
def test_only_ints_and_strings_seen_in_every_column_may_be_packed(
    rows: list[dict[str, Any]], packable: bool
) -> None:
    assert _may_pack(TAGS, rows) is packable


def test_packed_rows_must_equal_the_plain_ones_in_type_and_value() -> None:
    plain = [tag(), tag(tag="y", position=1)]
    assert _same([tag(tag="y", position=1), tag()], plain)  # any order
    assert not _same([tag(), tag(tag="y", position="1")], plain)  # a JSON-typed value differs
    assert not _same([tag()], plain)
    assert not _same(None, plain)  # the packed text was unusable
