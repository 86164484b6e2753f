"""The example aggregate type `article` (consumer/searchsync/examples/article.py)."""

from __future__ import annotations

import json
import random
import re
import zlib
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import PoisonMessage
from searchsync.examples import article

ROOT = Path(__file__).resolve().parents[2]
DOC_FIELDS = {
    "id",
    "title",
    "body",
    "tags",
    "source_revision",
    "projection_schema_version",
    "projection_hash",
    "sync_hash",
    "is_deleted",
}


def row(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "article_1",
        "title": "终焉之地",
        "body": "正文",
        "tags_json": '["游戏", "rules", "游戏"]',
        "revision": 3,
        "deleted_at": None,
        "updated_at": datetime(2026, 7, 19),
    }
    base.update(overrides)
    return base


def test_an_article_row_gives_its_document() -> None:
    doc = article.projector().project(row())
    assert doc.body == {
        "id": "article_1",
        "title": "终焉之地",
        "body": "正文",
        "tags": ["rules", "游戏"],
        "source_revision": 3,
        "projection_schema_version": article.SCHEMA_VERSION,
        "projection_hash": doc.projection_hash,
        "sync_hash": zlib.crc32(b"article:article_1"),
        "is_deleted": False,
    }
    deleted = article.projector().project(row(deleted_at=datetime(2026, 7, 20)))
    assert deleted.is_deleted is True and deleted.projection_hash != doc.projection_hash


@given(
    st.lists(st.text(st.sampled_from("abé"), min_size=1, max_size=4), max_size=6),
    st.randoms(use_true_random=False),
)
def test_tag_order_and_duplicates_do_not_change_the_document(
    tags: list[str], rnd: random.Random
) -> None:
    other = [*tags, *rnd.sample(tags, len(tags) // 2)]
    rnd.shuffle(other)
    first = article.projector().project(row(tags_json=json.dumps(tags)))
    second = article.projector().project(row(tags_json=json.dumps(other, indent=2)))
    assert first.to_json() == second.to_json()
    assert first.body["tags"] == sorted(set(first.body["tags"]))


@pytest.mark.parametrize(
    "overrides",
    [
        {"tags_json": "not json"},
        {"tags_json": "{}"},
        {"tags_json": "[1]"},
        {"tags_json": '[""]'},
        {"tags_json": None},
        {"title": None},
        {"body": 7},
    ],
)
def test_unprojectable_articles_are_poison(overrides: dict[str, Any]) -> None:
    with pytest.raises(PoisonMessage) as info:
        article.projector().project(row(**overrides))
    assert info.value.code == "PROJECTION_ERROR"


def test_packaged_mapping_is_a_copy_of_the_schema_file_and_covers_the_document() -> None:
    schema = ROOT / "schemas/index/examples/article.json"
    packaged = ROOT / "consumer/searchsync/_resources/article.mapping.json"
    assert orjson.loads(packaged.read_bytes()) == orjson.loads(schema.read_bytes())
    mapping = article.projector().mapping["mappings"]
    assert mapping["dynamic"] == "strict"
    assert set(mapping["properties"]) == DOC_FIELDS | {"tombstoned_at"}
    assert mapping["properties"]["tombstoned_at"] == {"type": "date"}


def test_projector_reads_the_columns_of_the_example_migration() -> None:
    sql = (ROOT / "schemas/sql/examples/article.sql").read_text(encoding="utf-8")
    columns = set(re.findall(r"^\s{4}(\w+)\s+[A-Z]", sql, flags=re.MULTILINE)) - {"PRIMARY"}
    assert columns == {"id", "title", "body", "tags_json", "revision", "deleted_at", "updated_at"}
    for column in ("id", "title", "body", "tags_json", "revision", "deleted_at"):
        assert column in article.COLUMNS
    assert article.TABLE == "article"
