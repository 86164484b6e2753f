"""Keys and column types as a team's own tables have them, read by `MysqlTruth` and `MysqlFanout` on
MariaDB: an integer key under another name (``product_id``, revision ``row_version``) in numeric
keyset order up to 2^64-1, an integer ``id`` in the repair's packed light pages, and every column
type the driver gives in its canonical form (docs/consumer.md, "Column types")."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import timedelta, timezone
from typing import Any

import aiomysql
import orjson
import pytest
import pytest_asyncio
from searchsync.mysql import truth_buckets
from searchsync.mysql.fanout import MysqlFanout
from searchsync.mysql.truth import MysqlTruth
from searchsync.projection import Child, Projector, Row, flag_column, json_column, set_column

from tests.integration.conftest_mysql import MysqlTarget
from tests.integration.scratch_tables import scratch_tables

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

BIG = 2**64 - 1
IDS = [2, 10, 100, BIG]  # text order would be 10, 100, 18446744073709551615, 2
MAPPING = {  # the type's own fields only: searchsync adds its reserved ones
    "mappings": {"dynamic": "strict", "properties": {"name": {"type": "keyword"}}}
}
TYPED = (
    "product_id", "row_version", "deleted_at", "category_id", "ts", "at", "dur", "flag",
    "status", "tags", "bits", "raw", "price", "doc", "yr", "ratio", "day",
)  # fmt: skip


def build(row: Row) -> dict[str, Any]:
    fields = {c: row[c] for c in TYPED if c not in ("product_id", "row_version", "deleted_at")}
    fields["flag"] = flag_column(row["flag"])
    fields["tags"] = set_column(row["tags"])
    fields["doc"] = json_column(row["doc"])
    fields["images"] = [i["url"] for i in row["images"]]
    return {**fields, "is_deleted": row["deleted_at"] is not None}


def typed_projector(table: str) -> Projector:
    return Projector(
        aggregate_type="kt_item",
        schema_version=1,
        table=table,
        columns=TYPED,
        build=build,
        mapping=MAPPING,
        children=(Child("images", f"{table}_i", "pid", ("pid", "pos", "url"), ("pos",)),),
        id_column="product_id",
        revision_column="row_version",
    )


def plain_projector(table: str) -> Projector:
    return Projector(
        aggregate_type="kt_plain",
        schema_version=1,
        table=table,
        columns=("id", "revision", "deleted_at"),
        build=lambda row: {"is_deleted": row["deleted_at"] is not None},
        mapping=MAPPING,
    )


@pytest_asyncio.fixture(loop_scope="session")
async def table(mysql_target: MysqlTarget, app_pool: aiomysql.Pool) -> AsyncIterator[str]:
    name = f"kt_{uuid.uuid4().hex[:8]}"
    ddl = [
        f"CREATE TABLE `{name}` (product_id BIGINT UNSIGNED NOT NULL, row_version BIGINT UNSIGNED"
        " NOT NULL, deleted_at DATETIME(6) NULL, category_id BIGINT UNSIGNED NULL,"
        " ts TIMESTAMP(6) NULL, at DATETIME(6) NULL, dur TIME(6) NULL, flag TINYINT(1) NULL,"
        " status ENUM('new','sold') NULL, tags SET('red','green','blue') NULL, bits BIT(12) NULL,"
        " raw VARBINARY(16) NULL, price DECIMAL(10,2) NULL, doc JSON NULL, yr YEAR NULL,"
        " ratio DOUBLE NULL, day DATE NULL,"
        " PRIMARY KEY (product_id), KEY by_category (category_id, product_id))",
        f"CREATE TABLE `{name}_i` (pid BIGINT UNSIGNED NOT NULL, pos INT NOT NULL,"
        " url VARCHAR(64) NOT NULL, PRIMARY KEY (pid, pos))",
        f"CREATE TABLE `{name}_p` (id BIGINT UNSIGNED NOT NULL, revision BIGINT UNSIGNED NOT NULL,"
        " deleted_at DATETIME(6) NULL, PRIMARY KEY (id))",
    ]
    async with scratch_tables(mysql_target, [name, f"{name}_i", f"{name}_p"], ddl):
        async with app_pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute("SET time_zone = '+00:00'")
            for n, key in enumerate(IDS):
                await cur.execute(
                    f"INSERT INTO `{name}` VALUES (%s, %s, NULL, 5, '2026-07-01 10:00:00.000005',"
                    " '2026-07-01 12:00:00.25', '-01:30:00.5', 1, 'sold', 'blue,red', b'100000001',"
                    " x'00ff', '12345678.05', '{\"a\": [1, 2.5], \"b\": null}', 2026, 0.5,"
                    " '2026-02-28')",
                    (key, n + 1),
                )
                await cur.execute(
                    f"INSERT INTO `{name}_i` VALUES (%s, 1, 'b'), (%s, 0, 'a')", (key, key)
                )
                await cur.execute(f"INSERT INTO `{name}_p` VALUES (%s, %s, NULL)", (key, n + 1))
            await conn.commit()
        yield name


async def test_an_integer_key_under_another_name_reads_by_id_in_numeric_keyset_order(
    table: str, consumer_pool: aiomysql.Pool
) -> None:
    truth, p = MysqlTruth(consumer_pool, batch_size=2), typed_projector(table)
    asked = ["10", "2", str(BIG), "100", "abc", "010", "7"]
    rows = await truth.rows_by_id(p, asked, primary=True)
    assert sorted(rows, key=int) == [str(i) for i in IDS]
    pages, after = [], None
    while page := await truth.scan(p, after, 3):
        pages.append([p.key_of(r) for r in page])
        after = p.key_of(page[-1])
    assert pages == [["2", "10", "100"], [str(BIG)]]
    assert [i["url"] for i in rows["10"]["images"]] == ["a", "b"]
    doc = p.project(rows[str(BIG)])
    assert (doc.doc_id, doc.source_revision) == (str(BIG), 4)


async def test_every_column_type_reads_into_its_canonical_form(
    table: str, consumer_pool: aiomysql.Pool
) -> None:
    p = typed_projector(table)
    row = (await MysqlTruth(consumer_pool).rows_by_id(p, ["2"]))["2"]
    body = orjson.loads(p.project(row).encoded)
    assert {k: body[k] for k in TYPED if k in body} == {
        "category_id": 5,
        "ts": "2026-07-01T10:00:00.000005Z",  # a TIMESTAMP: the instant, in UTC
        "at": "2026-07-01T12:00:00.250000Z",  # a DATETIME: naive, read as UTC by default
        "dur": "-01:30:00.500000",
        "flag": True,
        "status": "sold",
        "tags": ["blue", "red"],
        "bits": 257,
        "raw": "AP8=",
        "price": "12345678.05",
        "doc": {"a": [1, 2.5], "b": None},
        "yr": 2026,
        "ratio": 0.5,
        "day": "2026-02-28",
    }
    # [mysql] time_zone = '+02:00': the DATETIME was 12:00 there, the TIMESTAMP is unchanged
    zoned = MysqlTruth(consumer_pool, time_zone=timezone(timedelta(hours=2)))
    again = orjson.loads(p.project((await zoned.rows_by_id(p, ["2"]))["2"]).encoded)
    assert again["at"] == "2026-07-01T10:00:00.250000Z" and again["ts"] == body["ts"]


async def test_repair_pages_and_fanout_use_the_key_columns(
    table: str, consumer_pool: aiomysql.Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    unpacked: list[list[str] | None] = []
    real = truth_buckets.unpack_light

    def spy(packed: Any, *, max_len: int = truth_buckets.PACKED_MAX) -> Any:
        found = real(packed, max_len=max_len)
        unpacked.append(None if found is None else [e.id for e in found])
        return found

    monkeypatch.setattr(truth_buckets, "unpack_light", spy)
    truth = MysqlTruth(consumer_pool)
    for p in (typed_projector(table), plain_projector(f"{table}_p")):  # light pages packed: _p
        found, after = [], None  # pages of two, each after the last id of the one before
        while page := await truth.bucket_page(p, 0, 2**32, after, 2, content=False):
            found.extend(page)
            after = (0, page[-1].id)
        assert [(e.id, e.revision, e.deleted) for e in found] == [
            (str(k), n + 1, False) for n, k in enumerate(IDS)
        ]
        content = await truth.bucket_page(p, 0, 2**32, None, 10, content=True)
        assert [e.id for e in content] == [str(k) for k in IDS]
        assert all(e.row is not None for e in content)
    # the integer ids of the plain table came through the packed page, as their decimal text
    assert unpacked == [["2", "10"], ["100", str(BIG)], []]
    fanout = MysqlFanout(consumer_pool)
    keys = ("product_id", "row_version")
    deps = await fanout.dependents(table, "category_id", "5", "", 3, keys=keys)
    assert [(d.id, d.revision) for d in deps] == [("2", 1), ("10", 2), ("100", 3)]
    deps = await fanout.dependents(table, "category_id", "5", "100", 3, keys=keys)
    assert [d.id for d in deps] == [str(BIG)]
    assert await fanout.dependents(table, "category_id", "five", "", 3, keys=keys) == []
