"""The MySQL truth side's light pages on real MariaDB (searchsync/mysql/truth_buckets.py): a
page comes back as one packed GROUP_CONCAT string, and it holds exactly what ``SELECT id,
revision, deleted_at`` holds, in id order, for ids with commas, spaces, backslashes and
non-ASCII characters (and each row's state: live, soft-deleted, or soft-deleted before a cutoff,
packed or not); when the string would be cut at ``group_concat_max_len``, the page is read
as rows instead and nothing is lost. With the optional ``sync_hash`` column (a scratch copy of
the table, made as root over the server's socket) pages follow ``(sync_hash, id)``; on
Elasticsearch light pages read doc values only; neither misses anything wherever a page ends."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import aiomysql
import pytest
import pytest_asyncio
from searchsync.clock import utc_now
from searchsync.mysql import truth_buckets
from searchsync.mysql.dialect import Dialect
from searchsync.mysql.truth import MysqlTruth, TruthEntry
from searchsync.ops.repair.model import IndexEntry, entry_of
from searchsync.ops.repair.reader import key_of_id
from searchsync.projection import default_registry, sync_hash
from searchsync.search.client import make_es_client
from searchsync.search.es_index import EsIndex
from searchsync.types import BucketCursor
from searchsync.writer import PageWriter

from tests.integration.conftest_mysql import MysqlTarget, fetch_all, root_socket
from tests.integration.consumer_harness import (
    InProcessConsumer,
    drop_indices,
    harness_env,
    prepare_index,
)
from tests.scratch import admin_execute, sync_bucket_migration

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

_SUFFIXES = ["a,b", "c d", "e\\f", "é", "日本", "😀x", "g,,h", "0", "1", "Z", "zz"]


async def _scan(
    side: MysqlTruth, page: int, before: datetime | None = None
) -> tuple[list[TruthEntry], int]:
    projector = default_registry().get("wiki_page")
    out: list[TruthEntry] = []
    after: BucketCursor | None = None
    pages = 0
    while True:
        found = await side.bucket_page(
            projector, 0, 1 << 32, after, page, content=False, purged_before=before
        )
        pages += 1
        out.extend(found)
        if len(found) < page:
            return out, pages
        after = (sync_hash("wiki_page", found[-1].id), found[-1].id)


async def _rows(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, prefix: str
) -> list[TruthEntry]:
    writer = PageWriter(app_pool)
    for s in _SUFFIXES:
        await writer.create(prefix + s, f"title {s}", "body", {})
    await writer.soft_delete(prefix + "c d")
    await writer.update(prefix + "é", title="t2")
    rows = await fetch_all(
        consumer_pool,
        "SELECT id, revision, deleted_at FROM wiki_page IGNORE INDEX (PRIMARY)"
        " WHERE LEFT(id, %s) = %s ORDER BY id",
        (len(prefix), prefix),
    )
    return [TruthEntry(r["id"], int(r["revision"]), r["deleted_at"] is not None) for r in rows]


def _purged(entries: list[TruthEntry]) -> list[TruthEntry]:
    """`entries` as a page with a cutoff after every delete reads them."""
    return [replace(e, purged=e.deleted) for e in entries]


async def test_packed_pages_hold_exactly_the_rows_in_id_order(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, id_prefix: str
) -> None:
    want = await _rows(app_pool, consumer_pool, id_prefix)
    assert len(want) == len(_SUFFIXES) and any(e.deleted for e in want)
    assert any(e.revision > 1 and not e.deleted for e in want)
    side = MysqlTruth(consumer_pool, id_prefix=id_prefix)
    for page in (1, 3, 4, 100):
        got, pages = await _scan(side, page)
        assert got == want, page
        assert pages == len(want) // page + 1
    later, earlier = utc_now() + timedelta(minutes=5), utc_now() - timedelta(minutes=5)
    assert (await _scan(side, 4, later))[0] == _purged(want)
    assert (await _scan(side, 4, earlier))[0] == want


async def test_a_page_too_long_to_pack_is_read_as_rows(
    app_pool: aiomysql.Pool,
    consumer_pool: aiomysql.Pool,
    id_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    want = await _rows(app_pool, consumer_pool, id_prefix)
    limit = 40  # a few triples: MariaDB cuts every longer page's string here
    monkeypatch.setattr(truth_buckets, "PACKED_MAX", limit)
    assert f"= {limit} FOR" in truth_buckets._packed(Dialect("mariadb"), "t", "`id`", "0")
    unpacked: list[bool] = []
    real = truth_buckets.unpack_light

    def spy(packed: object, *, max_len: int = limit) -> list[TruthEntry] | None:
        got = real(packed, max_len=max_len)  # type: ignore[arg-type]
        unpacked.append(got is not None)
        return got

    monkeypatch.setattr(truth_buckets, "unpack_light", spy)
    side = MysqlTruth(consumer_pool, id_prefix=id_prefix)
    got, _ = await _scan(side, 100)
    assert got == want
    assert unpacked == [False]  # the one page was cut, refused, and read as rows
    purged, _ = await _scan(side, 100, utc_now() + timedelta(minutes=5))
    assert purged == _purged(want) and unpacked == [False, False]  # the state as rows too


@pytest_asyncio.fixture(loop_scope="session")
async def keyed_table(mysql_target: MysqlTarget) -> AsyncIterator[str]:
    """A scratch copy of wiki_page with the optional sync_hash column and (sync_hash, id) index."""
    table = f"it{uuid.uuid4().hex[:8]}_wiki_page"
    t = mysql_target
    await admin_execute(
        root_socket(),
        t.database,
        [
            f"CREATE TABLE `{table}` LIKE `wiki_page`",
            sync_bucket_migration(table),
            f"GRANT SELECT ON `{table}` TO '{t.consumer_user}'@'%'",
            f"GRANT SELECT, INSERT ON `{table}` TO '{t.app_user}'@'%'",
        ],
    )
    try:
        yield table
    finally:
        await admin_execute(root_socket(), t.database, [f"DROP TABLE IF EXISTS `{table}`"])


def _deleted_at(n: int) -> str | None:
    """Live, deleted before the test's cutoff, or after it."""
    return None if n % 5 else "2026-01-01" if n % 10 == 0 else "2099-01-01"


async def test_with_the_sync_hash_column_pages_follow_the_index_and_miss_nothing(
    app_pool: aiomysql.Pool, consumer_pool: aiomysql.Pool, keyed_table: str
) -> None:
    """Pages keyset by (sync_hash, id) through the index: every bucket of a key range, for pages
    that cut it anywhere, holds exactly the rows whose CRC32 key is in the range, each with its
    state (the cutoff is a parameter before the range's)."""
    ids = [f"k{n:03d}" for n in range(60)] + [f"k,{s}" for s in ("é", "日本", "😀")]
    async with app_pool.acquire() as conn, conn.cursor() as cur:
        await cur.executemany(
            f"INSERT INTO `{keyed_table}` (id, title, content, relations_json, revision,"
            " deleted_at, updated_at) VALUES (%s, 't', 'c', '{}', %s, %s, UTC_TIMESTAMP(6))",
            [(i, 1 + n % 4, _deleted_at(n)) for n, i in enumerate(ids)],
        )
        await conn.commit()
    projector = replace(default_registry().get("wiki_page"), table=keyed_table)
    key = key_of_id("wiki_page")
    side = MysqlTruth(consumer_pool, sync_hash_column=True)
    want = {i: TruthEntry(i, 1 + n % 4, n % 5 == 0, None, n % 10 == 0) for n, i in enumerate(ids)}
    cutoff = datetime(2050, 1, 1, tzinfo=UTC)
    lo, hi = (1 << 32) // 5, (1 << 32) * 4 // 5  # a range most but not all keys fall in
    in_range = {i for i in ids if lo <= key(i) < hi}
    assert 0 < len(in_range) < len(ids)
    for page in (1, 2, 7, 100):
        got: list[TruthEntry] = []
        after: BucketCursor | None = None
        while True:
            found = await side.bucket_page(
                projector, lo, hi, after, page, content=False, purged_before=cutoff
            )
            got.extend(found)
            if len(found) < page:
                break
            after = (key(found[-1].id), found[-1].id)
        assert [(key(e.id), e.id) for e in got] == sorted((key(i), i) for i in in_range), page
        assert got == [want[e.id] for e in got]


async def test_light_index_pages_read_doc_values_and_miss_nothing() -> None:
    """The Elasticsearch side's light pages (doc values only, no stored field): every document
    of the range once, in id order, with its version, schema version and deleted flag, for pages
    that cut it anywhere; a document without an ``id`` value is still found, by ``_id``."""
    settings = InProcessConsumer(harness_env("rk")).settings
    alias = settings.alias("wiki_page")
    await prepare_index(settings)
    es = make_es_client(settings)
    physical = f"{alias}_v1"
    try:
        docs = {f"d{n:03d}": (n % 7) * 1000 for n in range(40)}  # 7 keys, several ids each
        for n, (i, h) in enumerate(docs.items()):
            body = {"id": i, "sync_hash": h, "is_deleted": n % 3 == 0}
            body |= {"projection_schema_version": n % 4} if n % 5 else {}
            await es.index(
                index=physical, id=i, document=body, version=1 + n, version_type="external"
            )
        await es.indices.refresh(index=physical)
        side = EsIndex(es)
        n_of = {i: n for n, i in enumerate(docs)}
        want = [
            IndexEntry(
                i,
                1 + n_of[i],
                None,
                n_of[i] % 4 if n_of[i] % 5 else None,
                n_of[i] % 3 == 0,
                None,
                docs[i],
            )
            for i in sorted(i for i, h in docs.items() if 1000 <= h < 6000)
        ]
        for page in (1, 3, 8, 100):
            assert await _index_scan(side, alias, page) == want, page

        # a document searchsync did not write, without `id`: the page is read by `_id`
        await es.index(
            index=physical,
            id="d000x",
            document={"sync_hash": 2000},
            version=7,
            version_type="external",
        )
        await es.indices.refresh(index=physical)
        got = await _index_scan(side, alias, 100)
        assert {e.id for e in got} == {e.id for e in want} | {"d000x"}
        assert [e for e in got if e.id != "d000x"] == want
    finally:
        await es.close()
        await drop_indices(settings)


async def _index_scan(side: EsIndex, alias: str, page: int) -> list[IndexEntry]:
    got: list[IndexEntry] = []
    after: BucketCursor | None = None
    while True:
        docs = await side.bucket_page(alias, 1000, 6000, after, page, content=False)
        found = [entry_of(d, content=False) for d in docs]
        got.extend(found)
        if len(found) < page:
            return got
        after = (0, found[-1].id)  # the key is not used: the index side pages by id
