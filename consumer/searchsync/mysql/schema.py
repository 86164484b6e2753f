"""searchsync's own MySQL schema as a team applies it: the migrations (``schemas/sql/NNN_*.sql``,
each ``CREATE TABLE IF NOT EXISTS``, packaged as ``searchsync/_resources/sql``) and the grants of
the consumer, the application and Debezium (docs/security.md, "Least privilege"). The business
tables' grants are printed, never their DDL.

The least-privilege check of the consumer's MySQL user (`check_grants`, which `searchsync config
check --grants` prints): every grant of ``SHOW GRANTS FOR CURRENT_USER()`` that would let it write
or alter a business table (on ``*.*``, ``db.*`` or the table), password hashes masked."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from importlib import resources
from typing import Final

import aiomysql

from searchsync.mysql.dialect import DEFAULT_FLAVOR, Dialect, Flavor
from searchsync.mysql.pool import fetch_all
from searchsync.naming import IDENTIFIER

# Privileges on searchsync's own tables, per user: (table, privileges). One line per table.
_CONSUMER_OWN: Final = (
    ("search_outbox", "SELECT, INSERT, DELETE"),  # REBUILD events, outbox prune
    # the relay's claim columns only: an event's payload, type and id stay as written
    (
        "search_outbox",
        "UPDATE (status, attempts, available_at, locked_by, locked_at, last_error, updated_at)",
    ),
    ("search_projection_state", "SELECT, INSERT, UPDATE, DELETE"),
    ("search_dlq_replay", "SELECT, INSERT"),  # append-only ledger
    ("search_offset_gap_ack", "SELECT, INSERT"),  # append-only ledger
    ("search_topic_lineage", "SELECT, INSERT, UPDATE"),  # the topic id each group reads
    ("search_partition_owner", "SELECT, INSERT, UPDATE"),  # each partition's owner epoch
    ("search_rebuild_state", "SELECT, INSERT, UPDATE"),  # finished rebuilds stay as history
    ("search_revision_floor", "SELECT, INSERT, UPDATE"),  # the repair raises an orphan's floor
    ("search_repair_epoch", "SELECT, INSERT, UPDATE"),
    ("search_repair_bucket", "SELECT, INSERT, UPDATE"),
    ("search_repair_lease", "SELECT, INSERT, UPDATE"),  # one repair per type at a time
    ("search_canary", "SELECT, INSERT, UPDATE"),  # the exporter's freshness heartbeat
    ("search_fanout", "SELECT, INSERT, UPDATE"),  # fan-out jobs: finished ones stay as history
    ("search_load_state", "SELECT, INSERT, UPDATE"),  # initial loads: finished ones stay as history
)
_APP_OWN: Final = (
    ("search_outbox", "SELECT, INSERT, UPDATE, DELETE"),
    ("search_revision_floor", "SELECT, INSERT, UPDATE, DELETE"),
    ("search_projection_state", "SELECT, DELETE"),
)


@dataclass(frozen=True, slots=True)
class Migration:
    name: str  # the file name, e.g. ``001_init.sql``: its version in a migration tool
    sql: str


@dataclass(frozen=True, slots=True)
class DbUsers:
    """The three users' names and the host part of their accounts (defaults: the local stack)."""

    consumer: str = "searchsync"
    app: str = "searchsync_app"
    debezium: str = "debezium"
    host: str = "%"


def migrations() -> list[Migration]:
    """searchsync's own migrations, in the order they must be applied."""
    folder = resources.files("searchsync").joinpath("_resources/sql")
    files = sorted(
        (f for f in folder.iterdir() if f.name.endswith(".sql") and f.name[:3].isdigit()),
        key=lambda f: f.name,
    )
    return [Migration(f.name, f.read_text(encoding="utf-8")) for f in files]


def schema_sql() -> str:
    """Every migration in order, each under a ``-- migration <name>`` line: one script."""
    return "\n".join(f"-- migration {m.name}\n{m.sql.rstrip()}\n" for m in migrations())


def grant_statements(
    database: str,
    business_tables: list[str],
    users: DbUsers,
    flavor: Flavor = DEFAULT_FLAVOR,
) -> list[str]:
    """The GRANT statements for `users` on `database`: searchsync's own tables, plus read
    (consumer) and write (application) on `business_tables`, and Debezium's global privileges as
    the server family `flavor` names them. The accounts must already exist."""
    for name in (database, *business_tables):
        if not IDENTIFIER.fullmatch(name):
            raise ValueError(f"{name!r}: want an identifier {IDENTIFIER.pattern}")
    for user in astuple(users):
        if "'" in user or "\\" in user:
            raise ValueError(f"{user!r}: a user or host may not contain quotes or backslashes")

    own = {t for t, _ in _CONSUMER_OWN}
    business_tables = [t for t in dict.fromkeys(business_tables) if t not in own]

    consumer, app, debezium = (f"'{u}'@'{users.host}'" for u in astuple(users)[:3])
    grants = [(Dialect(flavor).debezium_global_privileges(), "*.*", debezium)]
    grants += [(privs, t, consumer) for t, privs in _CONSUMER_OWN]
    grants += [("SELECT", t, consumer) for t in business_tables]
    grants += [(privs, t, app) for t, privs in _APP_OWN]
    grants += [("SELECT, INSERT, UPDATE, DELETE", t, app) for t in business_tables]
    return [_grant(privs, database, table, account) for privs, table, account in grants]


def _grant(privileges: str, database: str, table: str, account: str) -> str:
    target = table if table == "*.*" else f"`{database}`.`{table}`"
    return f"GRANT {privileges} ON {target} TO {account};"


# privileges that write rows or change a table (or hand privileges on)
WRITE_PRIVILEGES: Final = frozenset(
    {
        "ALL",
        "ALL PRIVILEGES",
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "ALTER",
        "INDEX",
        "REFERENCES",
        "TRIGGER",
        "DELETE HISTORY",
        "GRANT OPTION",
    }
)
_GRANT: Final = re.compile(r"GRANT (?P<privs>.+?) ON (?P<target>\S+) TO ", re.IGNORECASE)
_HASH: Final = re.compile(r"(IDENTIFIED (?:BY PASSWORD|VIA \S+ USING) )'[^']*'", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class GrantReport:
    grants: tuple[str, ...]  # as the server shows them, password hashes masked
    violations: tuple[str, ...]  # one line per grant that could write a business table

    @property
    def ok(self) -> bool:
        return not self.violations


def violations(grants: Iterable[str], database: str, tables: Sequence[str]) -> list[str]:
    """The grants among `grants` that allow a write or DDL on `database`.`tables`. Pure."""
    found = []
    for grant in grants:
        match = _GRANT.match(grant.strip())
        if match is None:
            continue
        privileges = {p.strip().upper() for p in re.split(r",\s*", match["privs"])}
        privileges |= {"GRANT OPTION"} if "WITH GRANT OPTION" in grant.upper() else set()
        db, _, table = match["target"].partition(".")
        db, table = db.strip().strip("`"), table.strip().strip("`")
        covers = db == "*" or (db == database and (table == "*" or table in tables))
        bad = sorted(p for p in privileges if p in WRITE_PRIVILEGES)
        if covers and bad:
            where = "every table" if table == "*" else f"{db}.{table}"
            found.append(f"{', '.join(bad)} on {where}: {_masked(grant)}")
    return found


def _masked(grant: str) -> str:
    return _HASH.sub(r"\1'***'", grant)


async def check_grants(pool: aiomysql.Pool, database: str, tables: Sequence[str]) -> GrantReport:
    """Read the connected user's grants and check them against the business `tables`."""
    rows = await fetch_all(pool, "show grants", "SHOW GRANTS FOR CURRENT_USER()")
    grants = [str(row[0]) for row in rows]
    return GrantReport(tuple(map(_masked, grants)), tuple(violations(grants, database, tables)))
