"""An example second aggregate type, `article`, as a user would plug in their own.

Enable it with ``[projection] modules = ["searchsync.projection.wiki_page",
"searchsync.examples.article"]`` (or ``SEARCHSYNC_PROJECTION_MODULES``), subscribe to
``outbox.event.article`` and run ``searchsync index init --type article``. Its table is the
optional example migration schemas/sql/examples/article.sql; its mapping is
schemas/index/examples/article.json (packaged as searchsync/_resources/article.mapping.json).

Row columns used: id, title, body, tags_json, revision, deleted_at. The document:

- ``title``, ``body``: the columns, NFC-normalized;
- ``tags``: ``tags_json`` (a JSON array of non-empty strings), NFC, sorted, duplicates dropped;
- ``is_deleted``: ``deleted_at`` is set.

Anything else (tags_json not an array of non-empty strings, invalid JSON, a non-string title or
body) is `PoisonMessage("PROJECTION_ERROR")`.
"""

from __future__ import annotations

import unicodedata
from importlib import resources
from typing import Any

import orjson

from searchsync.errors import ErrorCode, PoisonMessage
from searchsync.projection import Projector, Row

__all__ = [
    "AGGREGATE_TYPE",
    "COLUMNS",
    "SCHEMA_VERSION",
    "TABLE",
    "build",
    "projector",
    "projectors",
]

AGGREGATE_TYPE = "article"
SCHEMA_VERSION = 1
TABLE = "article"
COLUMNS = ("id", "title", "body", "tags_json", "revision", "deleted_at")


def projector() -> Projector:
    """A new article `Projector` (reads the packaged mapping)."""
    data = resources.files("searchsync").joinpath("_resources/article.mapping.json").read_bytes()
    return Projector(
        aggregate_type=AGGREGATE_TYPE,
        schema_version=SCHEMA_VERSION,
        table=TABLE,
        columns=COLUMNS,
        build=build,
        mapping=orjson.loads(data),
    )


def projectors() -> tuple[Projector, ...]:
    """The plug-in contract of a module entry in ``projection.modules``."""
    return (projector(),)


def build(row: Row) -> dict[str, Any]:
    """The article fields of `row` (`Projector` adds id, revision and hash)."""
    return {
        "title": _text(row["title"], "title"),
        "body": _text(row["body"], "body"),
        "tags": _tags(row["tags_json"]),
        "is_deleted": row["deleted_at"] is not None,
    }


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise _poison(f"{name} must be a string, got {type(value).__name__}")
    return unicodedata.normalize("NFC", value)


def _tags(raw: object) -> list[str]:
    if isinstance(raw, str | bytes):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _poison(f"tags_json is not valid JSON: {exc}") from exc
    if not isinstance(raw, list):
        raise _poison(f"tags_json must be a JSON array, got {type(raw).__name__}")
    if not all(isinstance(tag, str) and tag for tag in raw):
        raise _poison("tags_json must hold non-empty strings only")
    return sorted({unicodedata.normalize("NFC", tag) for tag in raw})


def _poison(message: str) -> PoisonMessage:
    return PoisonMessage(ErrorCode.PROJECTION_ERROR, message)
