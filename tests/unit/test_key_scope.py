"""The initial load's key ranges and its checked ``--where`` condition
(`searchsync.mysql.key_scope`, `searchsync.ops.load.outcome.parse_part`)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import InvalidRequest
from searchsync.mysql.key_scope import KeyScope, check_where, ranges, scope_sql
from searchsync.ops.load.outcome import load_key, parse_part

keys = st.one_of(st.text(max_size=6), st.integers(-1000, 1000).map(str))


@given(st.lists(st.text(max_size=4), max_size=6), st.text(max_size=6))
def test_every_key_is_in_exactly_one_range(cuts: list[str], key: str) -> None:
    parts = ranges(sorted(cuts))
    holding = [
        s for s in parts if (s.low is None or key > s.low) and (s.high is None or key <= s.high)
    ]
    assert len(parts) == len(cuts) + 1
    assert len(holding) == 1


@given(st.lists(st.integers(-50, 50), max_size=6), st.integers(-60, 60))
def test_integer_keys_too(cuts: list[int], key: int) -> None:
    parts = ranges([str(c) for c in sorted(cuts)])  # compared as numbers by the database
    holding = [
        s
        for s in parts
        if (s.low is None or key > int(s.low)) and (s.high is None or key <= int(s.high))
    ]
    assert len(holding) == 1


@pytest.mark.parametrize(
    "where",
    [
        "id LIKE 'a%'",
        "title = 'a;b -- c /* d # e'",  # inside quotes: data, not SQL
        "(revision > 2) OR (title = ')')",
        "updated_at >= '2026-01-01' AND deleted_at IS NULL",
    ],
)
def test_one_condition_is_accepted(where: str) -> None:
    assert check_where(f"  {where} ") == where


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("", "empty"),
        ("id = 1; DROP TABLE wiki_page", "';' is refused"),
        ("id = 1 -- and more", "comment"),
        ("id = 1 /* x */", "comment"),
        ("id = 1 # x", "comment"),
        ("id = 1) OR (1 = 1", "')' without"),
        ("(id = 1", "'(' without"),
        ("title = 'open", "unclosed"),
        ("x" * 5000, "longer than"),
    ],
)
def test_anything_beyond_one_condition_is_refused(where: str, why: str) -> None:
    with pytest.raises(InvalidRequest, match=re.escape(why)):
        check_where(where)


def test_scope_sql_parenthesizes_the_condition_and_doubles_percent_signs() -> None:
    conditions, args = scope_sql(KeyScope("a", "m", "id LIKE 'a%'"), "`id`")
    assert conditions == ["`id` > %s", "`id` <= %s", "(id LIKE 'a%%')"]
    assert args == ["a", "m"]
    assert scope_sql(None, "`id`") == ([], [])


@pytest.mark.parametrize(("text", "want"), [("0/1", (0, 1)), ("3/4", (3, 4)), (" 1/2 ", (1, 2))])
def test_parts_parse(text: str, want: tuple[int, int]) -> None:
    assert parse_part(text) == want


@pytest.mark.parametrize("text", ["2/2", "-1/2", "1", "a/b", "0/0", "0/5000"])
def test_bad_parts_are_refused(text: str) -> None:
    with pytest.raises(InvalidRequest, match="--part"):
        parse_part(text)


def test_a_load_is_named_by_its_index_condition_and_parts() -> None:
    base = load_key("a_v1", None, 2)
    assert base == load_key("a_v1", None, 2)
    assert (
        len({base, load_key("a_v2", None, 2), load_key("a_v1", "x", 2), load_key("a_v1", None, 3)})
        == 4
    )
