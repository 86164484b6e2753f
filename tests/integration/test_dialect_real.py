"""The server-family texts on the real MariaDB (10.11 on the local stack): the pool detects
MariaDB, refuses ``[mysql] flavor = mysql`` in one line, and sets up each session as the dialect
says (READ COMMITTED, UTC); every text `Dialect("mariadb")` chooses runs and does what it says
(a per-statement ``group_concat_max_len``, a statement time limit). The MySQL texts are checked by
unit tests only (tests/unit/test_dialect*.py): no MySQL server is packaged for these machines.
"""

from __future__ import annotations

import uuid

import aiomysql
import pytest
from searchsync.errors import ConfigError
from searchsync.mysql.dialect import SERVER_PROBE, Dialect, flavor_of
from searchsync.mysql.pool import create_pool, dialect_of, transaction
from searchsync.writer import PageWriter

from tests.integration import conftest_mysql as fx
from tests.integration.conftest_mysql import MysqlTarget

mysql_target = fx.mysql_target
consumer_pool = fx.consumer_pool
app_pool = fx.app_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

MARIADB = Dialect("mariadb")


async def test_the_pool_detects_mariadb_and_sets_up_each_session(
    consumer_pool: aiomysql.Pool,
) -> None:
    async with transaction(consumer_pool) as conn, conn.cursor() as cur:
        assert dialect_of(conn).flavor == "mariadb"
        await cur.execute(SERVER_PROBE)
        version, comment = await cur.fetchone()
        assert flavor_of(version, comment) == "mariadb"
        await cur.execute("SELECT @@session.tx_isolation, @@session.time_zone")
        assert await cur.fetchone() == ("READ-COMMITTED", "+00:00")


async def test_a_configured_mysql_flavor_is_refused_naming_the_key(
    mysql_target: MysqlTarget,
) -> None:
    login = {
        "host": mysql_target.host,
        "port": mysql_target.port,
        "user": mysql_target.consumer_user,
        "password": mysql_target.consumer_password,
        "database": mysql_target.database,
        "minsize": 1,
        "maxsize": 1,
    }
    with pytest.raises(ConfigError) as caught:
        await create_pool(**login, flavor="mysql")
    assert str(caught.value).splitlines()[0].startswith("config mysql.flavor: expected auto or")
    assert "mariadb (the server at" in str(caught.value)
    pool = await create_pool(**login, flavor="mariadb")
    pool.close()
    await pool.wait_closed()


async def test_a_per_statement_group_concat_length_applies_to_that_statement_only(
    consumer_pool: aiomysql.Pool,
) -> None:
    sql = "SELECT GROUP_CONCAT(s SEPARATOR '') FROM (SELECT REPEAT('x', 100) AS s) AS t"
    async with transaction(consumer_pool) as conn, conn.cursor() as cur:
        await cur.execute(MARIADB.select(sql, group_concat_max_len=10))
        assert await cur.fetchone() == ("x" * 10,)
        await cur.execute(sql)  # the session's own value again (1024 by default)
        (text,) = await cur.fetchone()
        assert len(text) == 100


async def test_a_snapshot_transaction_reads_one_state_while_others_commit(
    mysql_target: MysqlTarget, app_pool: aiomysql.Pool
) -> None:
    """A root and its children read in one `transaction(snapshot=True)` agree: a commit between
    the two reads is invisible to the second. A fresh pool's first transaction may be one."""
    page = f"snapshot-{uuid.uuid4().hex[:10]}"
    writer = PageWriter(app_pool)
    await writer.create(page, "Snapshot", "one", {})
    pool = await create_pool(
        host=mysql_target.host,
        port=mysql_target.port,
        user=mysql_target.consumer_user,
        password=mysql_target.consumer_password,
        database=mysql_target.database,
        minsize=0,
        maxsize=1,
    )
    sql = "SELECT revision, content FROM wiki_page WHERE id = %s"
    try:
        async with transaction(pool, snapshot=True) as conn, conn.cursor() as cur:
            await cur.execute(sql, (page,))
            first = await cur.fetchone()
            await writer.update(page, content="two")  # committed by another connection
            await cur.execute(sql, (page,))
            assert await cur.fetchone() == first == (1, "one")
        async with transaction(pool) as conn, conn.cursor() as cur:  # READ COMMITTED again
            await cur.execute(sql, (page,))
            assert await cur.fetchone() == (2, "two")
            await writer.update(page, content="three")
            await cur.execute(sql, (page,))
            assert await cur.fetchone() == (3, "three")
    finally:
        pool.close()
        await pool.wait_closed()
