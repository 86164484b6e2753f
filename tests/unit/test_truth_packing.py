"""Which child tables the truth reads packed: only those whose values are ints and strings, and
only once every row read gave the same values as its own JSON_ARRAY
(searchsync.mysql.truth_relations)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
from searchsync.mysql.truth_relations import _may_pack, _same_row
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


def test_a_row_must_equal_its_json_object_in_type_and_value() -> None:
    assert _same_row(tag(), '{"article_id": "a1", "tag": "x", "position": 0}')
    assert _same_row(tag(), b'{"position":0,"tag":"x","article_id":"a1"}')  # any key order
    assert _same_row(tag(tag=None), '{"article_id": "a1", "tag": null, "position": 0}')
    escaped = '{"article_id":"a1","tag":"e\\u0301标签","position":0}'
    assert _same_row(tag(tag="e\u0301标签"), escaped)
    assert not _same_row(tag(), '{"article_id": "a1", "tag": "x", "position": "0"}')  # typed
    assert not _same_row(tag(), '{"article_id": "a1", "tag": "x", "position": 0.0}')
    assert not _same_row(tag(), '{"article_id": "a1", "tag": "x"}')
    assert not _same_row(tag(), '{"article_id": "a1", "tag": "x", "position": 0')  # cut short
    assert not _same_row(tag(), '["a1", "x", 0]')
    assert not _same_row(tag(), None)
    assert not _same_row(tag(tag="{}"), '{"article_id": "a1", "tag": {}, "position": 0}')
