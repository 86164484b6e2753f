"""Scratch copies for benchmarks and tests on a checkout's local stack: the optional ``sync_bucket``
migration for a copy of an aggregate table, DDL as MariaDB's root, and scratch databases (which
Debezium does not capture). Not part of the searchsync package: it needs a checkout."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Final

import aiomysql
from searchsync.naming import IDENTIFIER

_REPO: Final = Path(__file__).resolve().parents[1]
SYNC_BUCKET_SQL: Final = _REPO / "schemas" / "sql" / "optional" / "sync_bucket.sql"
_SCRIPTS: Final = _REPO / "deploy" / "local"
_TABLE: Final = "wiki_page"


def sync_bucket_migration(table: str) -> str:
    """The statement of ``sync_bucket.sql`` for a copy of wiki_page named `table` (the bucket key
    expression is unchanged: the aggregate type stays wiki_page)."""
    _identifier("table", table)
    text = SYNC_BUCKET_SQL.read_text(encoding="utf-8")
    sql = " ".join(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("--")
    ).rstrip(";")
    head = f"ALTER TABLE {_TABLE} "
    if not sql.startswith(head):
        raise RuntimeError(f"{SYNC_BUCKET_SQL} does not start with {head!r}")
    sql = f"ALTER TABLE `{table}` " + sql[len(head) :]
    return sql.replace(f"idx_{_TABLE}_sync_hash_id", f"idx_{table}_sync_hash_id")


async def admin_execute(socket: str, database: str, statements: Sequence[str]) -> None:
    """Run `statements` (DDL, grants) as root over the server's unix socket, autocommit."""
    conn = await aiomysql.connect(unix_socket=socket, user="root", db=database, autocommit=True)
    try:
        async with conn.cursor() as cur:
            for sql in statements:
                await cur.execute(sql)
    finally:
        conn.close()


def mysql_root(sql: str) -> str:
    """Run `sql` as MariaDB's root through deploy/local/lib.sh (the stack the environment names,
    e.g. ``STACK_DIR``); its output, tab-separated, without column names."""
    script = f'source "{_SCRIPTS}/env.sh"; source "{_SCRIPTS}/lib.sh"; mysql_root -N -e "$1"'
    done = subprocess.run(
        ["bash", "-c", script, "mysql_root", sql],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout


def create_database(name: str, *, log: IO[bytes] | None = None) -> None:
    """A database `name` with searchsync's schema and grants (deploy/local/migrate.sh, without
    the example tables); the script's output goes to `log`."""
    _identifier("database", name)
    subprocess.run(
        ["bash", str(_SCRIPTS / "migrate.sh")],
        env={**os.environ, "MYSQL_DATABASE": name, "APPLY_EXAMPLE_SCHEMAS": "0"},
        check=True,
        stdout=log if log is not None else subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        timeout=300,
    )


def drop_database(name: str) -> None:
    """Drop `name`, revoking its table grants first (MariaDB keeps a dropped table's grants)."""
    _identifier("database", name)
    grants = mysql_root(
        "SELECT DISTINCT CONCAT('`', Table_name, '` FROM `', User, '`@`', Host, '`')"
        f" FROM mysql.tables_priv WHERE Db = '{name}'"
    )
    for target in filter(None, (line.strip() for line in grants.splitlines())):
        mysql_root(f"REVOKE ALL PRIVILEGES ON `{name}`.{target}")
    mysql_root(f"DROP DATABASE IF EXISTS `{name}`")


def _identifier(what: str, name: str) -> None:
    if not IDENTIFIER.fullmatch(name):
        raise ValueError(f"{what} {name!r}: want an identifier [A-Za-z_][A-Za-z0-9_]*")
