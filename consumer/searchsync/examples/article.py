"""An example second aggregate type, `article`, plugged in as a user would (``[projection]
modules``; schemas/sql/examples/article.sql, schemas/index/examples/article.json). The document:
``title``, ``body``; ``tags`` from the child ``article_tag`` by position, later duplicates dropped;
``author_name`` from the lookup ``author`` (an aggregate of its own) or None; ``is_deleted``.
Strings are NFC; a bad value is a PROJECTION_ERROR."""

from __future__ import annotations

import unicodedata
from importlib import resources
from typing import Any

import orjson

from searchsync.errors import ErrorCode, PoisonMessage
from searchsync.projection import Child, Lookup, Projector, Row

AGGREGATE_TYPE = "article"
SCHEMA_VERSION = 2
TABLE = "article"
COLUMNS = ("id", "title", "body", "author_id", "revision", "deleted_at")
TAGS = Child(
    "tags",
    "article_tag",
    key="article_id",
    columns=("article_id", "tag", "position"),
    order_by=("position", "tag"),
)
AUTHOR = Lookup(
    "author", "author", via="author_id", columns=("id", "name"), aggregate_type="author"
)


def projector() -> Projector:
    data = resources.files("searchsync").joinpath("_resources/article.mapping.json").read_bytes()
    return Projector(
        aggregate_type=AGGREGATE_TYPE,
        schema_version=SCHEMA_VERSION,
        table=TABLE,
        columns=COLUMNS,
        build=build,
        mapping=orjson.loads(data),
        children=(TAGS,),
        lookups=(AUTHOR,),
        canonical_fields=True,  # `build` returns NFC strings, lists of them, None and a bool
    )


def projectors() -> tuple[Projector, ...]:
    """The plug-in contract of a module entry in ``projection.modules``."""
    return (projector(),)


def build(row: Row) -> dict[str, Any]:
    """The article fields of `row` (`Projector` adds id, revision and hash)."""
    author = row["author"]
    return {
        "title": _text(row["title"], "title"),
        "body": _text(row["body"], "body"),
        "tags": _tags(row["tags"]),
        "author_name": None if author is None else _text(author["name"], "author name"),
        "is_deleted": row["deleted_at"] is not None,
    }


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise _poison(f"{name} must be a string, got {type(value).__name__}")
    return _nfc(value)


def _tags(rows: list[Row]) -> list[str]:
    tags: dict[str, None] = {}
    for tag_row in rows:
        tag = tag_row["tag"]
        if not isinstance(tag, str) or not tag:
            raise _poison(f"a tag must be a non-empty string, got {tag!r}")
        tags.setdefault(_nfc(tag))
    return list(tags)


def _nfc(value: str) -> str:
    """NFC of `value` (an ASCII string is its own NFC: no call for it)."""
    return value if value.isascii() else unicodedata.normalize("NFC", value)


def _poison(message: str) -> PoisonMessage:
    return PoisonMessage(ErrorCode.PROJECTION_ERROR, message)
