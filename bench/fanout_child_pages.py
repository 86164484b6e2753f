"""The fan-out's read of "who references X" through a child table, against through a column of the
dependents' own table: every page of the N dependents of one referenced row, side by side.

    python -m bench.fanout_child_pages [--dependents N] [--others M] [--page P] [--repeat R]

MariaDB only (no Kafka, no Elasticsearch). Scratch tables, created as MariaDB's root over the
stack's socket (deploy/local/env.sh: ``MYSQL_SOCKET``) and dropped at the end: ``bf<hex>_p``,
N + M roots with a column ``ref`` and the index ``(ref, id)``, every (N + M) / N-th of them
referencing X; ``bf<hex>_pc``, their link rows (a dependent links X once, every third one twice,
beside a link to another row; the others link two other rows) with the index ``(ref_id,
product_id)``. Each route pages from the start to the end with `MysqlFanout.dependents` (a
one-connection pool as root), R times, in turn:

- ``column``: through the roots' own column;
- ``child``: through the link table, as the fan-out runs it (join order and index named);
- ``child-unhinted``: the same query without the two hints: what MariaDB chooses by itself.

Reported per route: the median seconds per pass, dependents per second, and the index entries
read per pass (the session's ``Handler_read_next`` + ``Handler_read_key``). It asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Sequence

import aiomysql
from searchsync.config import MysqlSettings
from searchsync.mysql.fanout import Dependent, MysqlFanout
from searchsync.mysql.fanout_dependents import dependents_sql
from searchsync.mysql.pool import transaction
from searchsync.projection import Child

from bench.app_writer import _root_socket
from bench.common import host_line, progress, started_at
from tests.scratch import admin_execute


def _ddl(p: str, dependents: int, others: int) -> list[str]:
    total = dependents + others
    step = max(1, total // dependents)
    pid = "CONCAT('p', LPAD(seq, 8, '0'))"
    hot = f"seq % {step} = 0 AND seq <= {step * dependents}"
    charset = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    return [
        f"CREATE TABLE {p}_p (id VARCHAR(64) NOT NULL, revision BIGINT UNSIGNED NOT NULL,"
        f" ref VARCHAR(64) NULL, PRIMARY KEY (id), KEY ref_id (ref, id)) {charset}",
        f"CREATE TABLE {p}_pc (product_id VARCHAR(64) NOT NULL, ref_id VARCHAR(64) NOT NULL,"
        " position INT NOT NULL, PRIMARY KEY (product_id, position),"
        f" KEY ref_product (ref_id, product_id)) {charset}",
        f"INSERT INTO {p}_p SELECT {pid}, 1, IF({hot}, 'X', CONCAT('r', seq % 997))"
        f" FROM seq_1_to_{total}",
        f"INSERT INTO {p}_pc SELECT {pid}, IF({hot}, 'X', CONCAT('r', seq % 997)), 0"
        f" FROM seq_1_to_{total}",
        f"INSERT INTO {p}_pc SELECT {pid}, CONCAT('r', (seq * 7) % 997), 1 FROM seq_1_to_{total}",
        f"INSERT INTO {p}_pc SELECT {pid}, 'X', 2 FROM seq_1_to_{total}"
        f" WHERE {hot} AND seq % 3 = 0",
        f"ANALYZE TABLE {p}_p, {p}_pc",
    ]


class _Unhinted(MysqlFanout):
    """The child route's query without STRAIGHT_JOIN and FORCE INDEX."""

    def __init__(self, pool: aiomysql.Pool) -> None:
        super().__init__(pool)
        self._own = pool

    async def dependents(
        self,
        table: str,
        via: str,
        referenced_id: str,
        after: str,
        limit: int,
        *,
        through: Child | None = None,
        keys: tuple[str, str] = ("id", "revision"),
    ) -> list[Dependent]:
        sql = dependents_sql(table, via, through, None, keys=keys).replace("STRAIGHT_JOIN ", "")
        async with transaction(self._own) as conn, conn.cursor() as cur:
            await cur.execute(sql, (referenced_id, after, limit))
            return [Dependent(str(r[0]), int(r[1])) for r in await cur.fetchall()]


async def _reads(pool: aiomysql.Pool) -> int:
    async with pool.acquire() as conn, conn.cursor() as cur:
        await cur.execute(
            "SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_key')"
        )
        return sum(int(v) for _, v in await cur.fetchall())


async def _pass(store: MysqlFanout, p: str, page: int, child: Child | None) -> int:
    via = "ref" if child is None else "ref_id"
    found, after = 0, ""
    while rows := await store.dependents(f"{p}_p", via, "X", after, page, through=child):
        found, after = found + len(rows), rows[-1].id
    return found


async def run(dependents: int, others: int, page: int, repeat: int) -> list[str]:
    mysql, socket = MysqlSettings(), _root_socket()
    p = f"bf{uuid.uuid4().hex[:8]}"
    progress(f"seeding {p}: {dependents} dependents, {others} other roots")
    await admin_execute(socket, mysql.database, _ddl(p, dependents, others))
    pool = await aiomysql.create_pool(
        unix_socket=socket, user="root", db=mysql.database, minsize=1, maxsize=1
    )
    child = Child("links", f"{p}_pc", key="product_id",
                  columns=("product_id", "ref_id", "position"), order_by=())  # fmt: skip
    routes: dict[str, tuple[MysqlFanout, Child | None]] = {
        "column": (MysqlFanout(pool), None),
        "child": (MysqlFanout(pool), child),
        "child-unhinted": (_Unhinted(pool), child),
    }
    seconds: dict[str, list[float]] = {name: [] for name in routes}
    reads: dict[str, int] = {}
    counts: dict[str, int] = {}
    try:
        for name, (store, through) in routes.items():  # warm: index found, pages cached
            counts[name] = await _pass(store, p, page, through)
        for n in range(repeat):
            for name, (store, through) in routes.items():
                before = await _reads(pool)
                started = time.perf_counter()
                await _pass(store, p, page, through)
                seconds[name].append(time.perf_counter() - started)
                reads[name] = await _reads(pool) - before
            progress(f"round {n + 1}/{repeat} done")
    finally:
        pool.close()
        await pool.wait_closed()
        await admin_execute(socket, mysql.database, [f"DROP TABLE {p}_p, {p}_pc"])
    column = statistics.median(seconds["column"])
    lines = [
        f"started {started_at()} on {host_line()}",
        f"{dependents} dependents, {others} other roots, page {page}, {repeat} passes each",
    ]
    for name in routes:
        s = statistics.median(seconds[name])
        lines.append(
            f"{name:<15} {counts[name]:>7} found  {s:>7.3f} s/pass  {counts[name] / s:>9.0f}/s"
            f"  {reads[name]:>9} index reads/pass  {s / column:>5.2f}x column"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fanout_child_pages", description=__doc__)
    parser.add_argument("--dependents", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=40_000)
    parser.add_argument("--page", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for line in asyncio.run(run(args.dependents, args.others, args.page, args.repeat)):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
