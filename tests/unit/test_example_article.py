"""The example aggregate type `article` (consumer/searchsync/examples/article.py)."""

from __future__ import annotations

import random
import re
import unicodedata
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

from tests.fakes.truth import attach

ROOT = Path(__file__).resolve().parents[2]
DOC_FIELDS = {
    "id",
    "title",
    "body",
    "tags",
    "author_name",
    "source_revision",
    "projection_schema_version",
    "projection_hash",
    "sync_hash",
    "is_deleted",
}


def tag_rows(tags: list[str], article_id: str = "article_1") -> list[dict[str, Any]]:
    return [{"article_id": article_id, "tag": t, "position": i} for i, t in enumerate(tags)]


def row(**overrides: Any) -> dict[str, Any]:
    """An article row as the truth port hands it to build: with its tags and author attached."""
    base: dict[str, Any] = {
        "id": "article_1",
        "title": "终焉之地",
        "body": "正文",
        "author_id": "author_1",
        "revision": 3,
        "deleted_at": None,
        "updated_at": datetime(2026, 7, 19),
        "tags": tag_rows(["游戏", "rules"]),
        "author": {"id": "author_1", "name": "阿尔托莉雅"},
    }
    base.update(overrides)
    return base


def test_an_article_row_gives_its_document() -> None:
    doc = article.projector().project(row())
    assert doc.body == {
        "id": "article_1",
        "title": "终焉之地",
        "body": "正文",
        "tags": ["游戏", "rules"],
        "author_name": "阿尔托莉雅",
        "source_revision": 3,
        "projection_schema_version": article.SCHEMA_VERSION,
        "projection_hash": doc.projection_hash,
        "sync_hash": zlib.crc32(b"article:article_1"),
        "is_deleted": False,
    }
    deleted = article.projector().project(row(deleted_at=datetime(2026, 7, 20)))
    assert deleted.is_deleted is True and deleted.projection_hash != doc.projection_hash
    orphan = article.projector().project(row(author_id=None, author=None, tags=[]))
    assert orphan.body["author_name"] is None and orphan.body["tags"] == []


@given(
    st.lists(st.text(st.sampled_from("abé"), min_size=1, max_size=4), max_size=6, unique=True),
    st.randoms(use_true_random=False),
)
def test_tags_follow_their_position_and_read_order_does_not_change_the_document(
    tags: list[str], rnd: random.Random
) -> None:
    rows = tag_rows(tags)
    shuffled = rnd.sample(rows, len(rows))
    first = article.projector().project(attached(rows))
    second = article.projector().project(attached(shuffled))
    assert first.encoded == second.encoded
    nfc = [unicodedata.normalize("NFC", t) for t in tags]
    assert first.body["tags"] == list(dict.fromkeys(nfc))


def attached(tags: list[dict[str, Any]]) -> dict[str, Any]:
    """An article root row with `tags` attached the way the truth port attaches them."""
    root = {k: v for k, v in row().items() if k not in ("tags", "author")}
    author = {"id": "author_1", "name": "n"}
    attach([root], [(article.TAGS, tags)], [(article.AUTHOR, [author])])
    return root


@pytest.mark.parametrize(
    "overrides",
    [
        {"tags": [{"article_id": "article_1", "tag": "", "position": 0}]},
        {"tags": [{"article_id": "article_1", "tag": 1, "position": 0}]},
        {"tags": None},
        {"author": {"id": "author_1", "name": None}},
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
    tables = {
        name: set(re.findall(r"^\s{4}(\w+)\s+[A-Z]", body, flags=re.MULTILINE)) - {"PRIMARY"}
        for name, body in re.findall(
            r"^CREATE TABLE IF NOT EXISTS (\w+) \((.*?)^\)", sql, flags=re.MULTILINE | re.DOTALL
        )
    }
    assert tables["article"] == {
        "id", "title", "body", "author_id", "revision", "deleted_at", "updated_at"
    }  # fmt: skip
    assert set(article.COLUMNS) == tables["article"] - {"updated_at"}
    assert article.TABLE == "article"
    assert set(article.TAGS.columns) == tables[article.TAGS.table]
    assert set(article.AUTHOR.columns) < tables[article.AUTHOR.table]
    assert tables["author"] == {"id", "name", "revision", "deleted_at", "updated_at"}
    # the indexes the declarations need: the child's key leads a key, (via, id) on the root
    assert "PRIMARY KEY (article_id, tag)" in sql
    assert "KEY article_author (author_id, id)" in sql
