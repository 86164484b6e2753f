"""The independent checker of a fan-out schedule's articles and authors: MySQL rows against the
article documents, both ways.

Written from the example's contract (consumer/searchsync/examples/article.py's docstring,
docs/design.md "Fan-out" and invariants 3, 12 and 17), NOT from the projector: nothing here
imports `searchsync.examples` or `searchsync.projection`. For every article row of the run's id
prefix the document must exist with

- ``_version`` = ``source_revision`` = the row's ``revision``;
- ``id``, ``title`` and ``body`` (NFC), ``tags`` (the ``article_tag`` rows by position, later
  duplicates dropped), ``author_name`` (the CURRENT name of the row's author, NFC; None without
  one: a stale name left by a rewrite at an unchanged revision is divergent),
  ``projection_schema_version`` 2, ``is_deleted`` (``deleted_at`` set);
- ``projection_hash`` = sha256 of the canonical JSON of those fields.

The other way: every article document of the prefix must have a row (no orphans). The run's
authors are rows only (no index of their own): each is checked through its articles.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import aiomysql
from elasticsearch import AsyncElasticsearch

from tests.faults.checker import _select, canonical, documents

SCHEMA_VERSION = 2
_OPERATIONAL = ("tombstoned_at", "sync_hash", "projection_hash")


@dataclass(slots=True)
class ArticleReport:
    rows: int = 0
    authors: int = 0
    documents: int = 0
    divergent: int = 0
    stale_author: int = 0  # documents whose only difference is an older author name
    resurrected: int = 0
    examples: list[str] = field(default_factory=list)

    def fail(self, doc_id: str, why: str, *, resurrected: bool = False) -> None:
        self.divergent += 1
        self.resurrected += int(resurrected)
        if len(self.examples) < 10:
            self.examples.append(f"{doc_id}: {why}")


def expected_article(
    row: dict[str, Any], tags: list[str], author_name: str | None
) -> dict[str, Any]:
    return {
        "id": row["id"],
        "title": _nfc(row["title"]),
        "body": _nfc(row["body"]),
        "tags": list(dict.fromkeys(_nfc(t) for t in tags)),
        "author_name": None if author_name is None else _nfc(author_name),
        "is_deleted": row["deleted_at"] is not None,
        "source_revision": int(row["revision"]),
        "projection_schema_version": SCHEMA_VERSION,
    }


async def pending_jobs(pool: aiomysql.Pool, author_id: str) -> int:
    """The pending fan-out jobs of `author_id` (any dependent type)."""
    rows = await _select(
        pool,
        "SELECT COUNT(*) AS n FROM search_fanout WHERE referenced_type = 'author'"
        " AND referenced_id = %s AND status = 'pending'",
        (author_id,),
    )
    return int(rows[0]["n"])


async def check(
    pool: aiomysql.Pool, es: AsyncElasticsearch, alias: str, prefix: str
) -> ArticleReport:
    like = (prefix + "%",)
    rows = await _select(
        pool,
        "SELECT id, title, body, author_id, revision, deleted_at FROM article WHERE id LIKE %s",
        like,
    )
    tag_rows = await _select(
        pool,
        "SELECT article_id, tag FROM article_tag WHERE article_id LIKE %s"
        " ORDER BY article_id, position, tag",
        like,
    )
    authors = await _select(pool, "SELECT id, name FROM author WHERE id LIKE %s", like)
    tags: dict[str, list[str]] = defaultdict(list)
    for t in tag_rows:
        tags[t["article_id"]].append(_text(t["tag"]))
    names = {a["id"]: _text(a["name"]) for a in authors}
    docs = await documents(es, alias, prefix)
    report = ArticleReport(rows=len(rows), authors=len(authors), documents=len(docs))
    for row in rows:
        author = row["author_id"]
        want = expected_article(row, tags[row["id"]], None if author is None else names[author])
        _compare(report, row["id"], docs.get(row["id"]), want)
    for doc_id in docs.keys() - {r["id"] for r in rows}:
        report.fail(doc_id, "an article document without a row")
    return report


def _compare(
    report: ArticleReport, doc_id: str, hit: dict[str, Any] | None, want: dict[str, Any]
) -> None:
    if hit is None:
        report.fail(doc_id, f"missing (want revision {want['source_revision']})")
        return
    source = hit["_source"]
    resurrected = want["is_deleted"] and not source.get("is_deleted")
    if hit["_version"] != want["source_revision"]:
        why = f"_version {hit['_version']} != revision {want['source_revision']}"
        report.fail(doc_id, why, resurrected=resurrected)
        return
    got = {k: v for k, v in source.items() if k not in _OPERATIONAL}
    if got != want:
        if {**got, "author_name": want["author_name"]} == want:
            report.stale_author += 1
            why = f"author_name {got.get('author_name')!r} != {want['author_name']!r}"
        else:
            why = f"fields differ: {got} != {want}"
        report.fail(doc_id, why, resurrected=resurrected)
        return
    if source.get("projection_hash") != hashlib.sha256(canonical(want)).hexdigest():
        report.fail(doc_id, "projection_hash is not the hash of its fields")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


def _nfc(value: Any) -> str:
    return unicodedata.normalize("NFC", _text(value))
