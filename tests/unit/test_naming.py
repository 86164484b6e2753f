"""Alias and physical index names: the layout, Elasticsearch's name rules, the next version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync import naming
from searchsync.config import ElasticsearchSettings, Settings
from searchsync.errors import InvalidIndexName

prefixes = st.from_regex(naming.INDEX_PREFIX, fullmatch=True)
types = st.from_regex(naming.AGGREGATE_TYPE, fullmatch=True)
versions = st.integers(1, 10**12)


def test_the_layout() -> None:
    alias = naming.alias_name("searchsync", "wiki_page")
    assert alias == "searchsync_wiki_page"
    assert naming.physical_name(alias, 2) == "searchsync_wiki_page_v2"
    assert naming.physical_name(alias, 1) == f"{alias}_v1"
    assert naming.parse_physical_name("searchsync_wiki_page_v12") == (alias, 12)


def test_settings_alias_delegates_to_naming() -> None:
    settings = Settings(elasticsearch=ElasticsearchSettings(index_prefix="kb"))
    assert settings.alias("wiki_page") == "kb_wiki_page"
    with pytest.raises(InvalidIndexName):
        settings.alias("Wiki Page")


@pytest.mark.parametrize(
    "name",
    [
        "",
        "Upper",
        "with space",
        "a,b",
        "a#b",
        "a:b",
        "a*",
        "a?b",
        'a"b',
        "a<b",
        "a>b",
        "a|b",
        "a/b",
        "a\\b",
        "-a",
        "_a",
        "+a",
        ".a",
        ".",
        "..",
        "a" * 256,
        "é" * 128,  # 256 bytes in UTF-8
    ],
)
def test_names_elasticsearch_refuses_are_refused(name: str) -> None:
    with pytest.raises(InvalidIndexName):
        naming.check_index_name(name)


@pytest.mark.parametrize("name", ["a", "a-b_c.d", "a+b", "0abc", "a" * 255, "齐夏"])
def test_names_elasticsearch_accepts_are_accepted(name: str) -> None:
    assert naming.check_index_name(name) == name


@pytest.mark.parametrize(
    ("prefix", "aggregate_type"),
    [("", "t"), ("_x", "t"), ("-x", "t"), ("X", "t"), ("p", ""), ("p", "1t"), ("p", "t-x")],
)
def test_alias_name_checks_prefix_and_type(prefix: str, aggregate_type: str) -> None:
    with pytest.raises(InvalidIndexName):
        naming.alias_name(prefix, aggregate_type)


@pytest.mark.parametrize("version", [0, -1, True, 1.0])
def test_physical_name_wants_a_positive_int(version: object) -> None:
    with pytest.raises(InvalidIndexName):
        naming.physical_name("a", version)  # type: ignore[arg-type]


def test_an_alias_too_long_for_a_suffix_is_refused() -> None:
    with pytest.raises(InvalidIndexName):
        naming.physical_name("a" * 250, 1)


@pytest.mark.parametrize(
    "name", ["a_v0", "a_v01", "a_v", "a_vx", "a_v1_copy", "a-v1", "A_v1", "_v1", "a_v1 "]
)
def test_other_shapes_are_not_physical_names(name: str) -> None:
    assert naming.parse_physical_name(name) is None


def test_physical_version_is_for_this_alias_only() -> None:
    assert naming.physical_version("kb_page", "kb_page_v3") == 3
    assert naming.physical_version("kb_page", "kb_pagex_v3") is None
    assert naming.physical_version("kb", "kb_page_v3") is None


@given(prefixes, types, versions)
def test_physical_names_round_trip(prefix: str, aggregate_type: str, version: int) -> None:
    alias = naming.alias_name(prefix, aggregate_type)
    name = naming.physical_name(alias, version)
    assert naming.parse_physical_name(name) == (alias, version)
    assert naming.physical_version(alias, name) == version
    assert naming.check_index_name(name) == name


@given(types, st.lists(versions, max_size=8), st.lists(st.text(max_size=12), max_size=5))
def test_next_physical_name_is_above_every_existing_version(
    aggregate_type: str, existing: list[int], noise: list[str]
) -> None:
    alias = naming.alias_name("kb", aggregate_type)
    names = [naming.physical_name(alias, v) for v in existing] + noise
    names += [naming.physical_name(alias + "x", 99)]  # another alias's index does not count
    following = naming.next_physical_name(alias, names)
    assert naming.physical_version(alias, following) == max(existing, default=0) + 1
    assert naming.next_physical_name(alias, reversed(names)) == following
