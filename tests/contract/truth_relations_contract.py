"""The `Truth` contract for children and lookups (the example `article`: its tags in
``article_tag``, its author in ``author``): each case takes a `RelationsWorld` and runs unchanged
against `FakeTruth` (tests/unit/test_mysql_contracts.py) and `MysqlTruth` on MariaDB
(tests/integration/test_mysql_contracts_real.py). Ids a case writes start with the world's
`prefix`; the truth pages buckets of these ids only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, Protocol

from searchsync.examples import article
from searchsync.mysql.truth import Truth
from searchsync.projection import Row, sync_hash
from searchsync.types import HASH_SPACE, BucketCursor

from tests.fakes.truth import FakeTruth

PROJECTOR = article.projector()


class RelationsWorld(Protocol):
    truth: Truth
    prefix: str

    async def put_article(self, row: Row) -> None:
        """Store one article row (id, title, body, author_id, revision, deleted_at)."""
        ...

    async def put_tag(self, article_id: str, tag: str, position: int) -> None: ...

    async def put_author(self, author_id: str, name: str) -> None: ...


class FakeRelationsWorld:
    def __init__(self, prefix: str = "r-") -> None:
        self.truth = FakeTruth()
        self.prefix = prefix

    async def put_article(self, row: Row) -> None:
        self.truth.put(row, table="article")

    async def put_tag(self, article_id: str, tag: str, position: int) -> None:
        tag_row = {"article_id": article_id, "tag": tag, "position": position}
        self.truth.put_child(tag_row, table="article_tag")

    async def put_author(self, author_id: str, name: str) -> None:
        self.truth.put({"id": author_id, "name": name, "revision": 1}, table="author")


def _article(w: RelationsWorld, suffix: str, author: str | None, *, deleted: bool = False) -> Row:
    return {
        "id": w.prefix + suffix,
        "title": f"终焉之地 {suffix}",
        "body": "正文",
        "author_id": None if author is None else w.prefix + author,
        "revision": 2,
        "deleted_at": datetime(2026, 1, 2, 3, 4, 5) if deleted else None,
    }


async def _world(w: RelationsWorld) -> list[str]:
    """Articles a (author u1, tags in an order the inserts do not follow), b (soft-deleted, an
    author that does not exist), c (no author, no tags); u2 authors nothing."""
    await w.put_author(w.prefix + "u1", "阿尔托莉雅")
    await w.put_author(w.prefix + "u2", "nobody's")
    for suffix, author, deleted in (("a", "u1", False), ("b", "gone", True), ("c", None, False)):
        await w.put_article(_article(w, suffix, author, deleted=deleted))
    for tag, position in (("游戏", 2), ("rules", 0), ("b-tag", 1), ("a-tag", 1)):
        await w.put_tag(w.prefix + "a", tag, position)
    await w.put_tag(w.prefix + "b", "only", 0)
    return [w.prefix + s for s in "abc"]


def _shape(row: Row) -> tuple[Any, ...]:
    """What a case compares: the tags as (tag, position) in the order build gets them, and the
    author's (id, name) or None."""
    author = row["author"]
    return (
        [(t["tag"], int(t["position"])) for t in row["tags"]],
        None if author is None else (author["id"], author["name"]),
    )


def _expected(w: RelationsWorld) -> dict[str, tuple[Any, ...]]:
    p = w.prefix
    return {
        p + "a": (
            [("rules", 0), ("a-tag", 1), ("b-tag", 1), ("游戏", 2)],
            (p + "u1", "阿尔托莉雅"),
        ),
        p + "b": ([("only", 0)], None),
        p + "c": ([], None),
    }


async def contract_rows_by_id_attach_children_and_lookups(w: RelationsWorld) -> None:
    ids = await _world(w)
    got = await w.truth.rows_by_id(PROJECTOR, ids)
    assert {i: _shape(r) for i, r in got.items()} == _expected(w)
    primary = await w.truth.rows_by_id(PROJECTOR, ids, primary=True)
    assert {i: _shape(r) for i, r in primary.items()} == _expected(w)
    one = await w.truth.rows_by_id(PROJECTOR, [ids[0]])
    assert _shape(one[ids[0]]) == _expected(w)[ids[0]]


async def contract_scan_and_bucket_pages_carry_the_same_children(w: RelationsWorld) -> None:
    ids = await _world(w)
    scanned: dict[str, Row] = {}
    after: str | None = w.prefix
    while page := await w.truth.scan(PROJECTOR, after, 2):
        scanned.update((str(r["id"]), r) for r in page if str(r["id"]).startswith(w.prefix))
        if not str(page[-1]["id"]).startswith(w.prefix):
            break
        after = str(page[-1]["id"])
    assert {i: _shape(r) for i, r in scanned.items()} == _expected(w)
    bucketed: dict[str, Row] = {}
    light: list[str] = []
    cursor: BucketCursor | None = None
    while entries := await w.truth.bucket_page(PROJECTOR, 0, HASH_SPACE, cursor, 2, content=True):
        bucketed.update((e.id, e.row) for e in entries if e.row is not None)
        cursor = (sync_hash(PROJECTOR.aggregate_type, entries[-1].id), entries[-1].id)
    cursor = None
    while entries := await w.truth.bucket_page(PROJECTOR, 0, HASH_SPACE, cursor, 2, content=False):
        assert all(e.row is None for e in entries)
        light.extend(e.id for e in entries)
        cursor = (sync_hash(PROJECTOR.aggregate_type, entries[-1].id), entries[-1].id)
    assert {i: _shape(r) for i, r in bucketed.items()} == _expected(w)
    assert sorted(light) == ids
    by_id = await w.truth.rows_by_id(PROJECTOR, ids)
    for i in ids:  # every read path gives the same document, byte for byte (invariant 6)
        same = {PROJECTOR.project(rows[i]).encoded for rows in (by_id, scanned, bucketed)}
        assert len(same) == 1, i


RELATIONS_CASES: list[Callable[[Any], Awaitable[None]]] = [
    contract_rows_by_id_attach_children_and_lookups,
    contract_scan_and_bucket_pages_carry_the_same_children,
]
