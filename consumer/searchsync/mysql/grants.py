"""The least-privilege check of the consumer's MySQL user (docs/security.md): every grant of
``SHOW GRANTS FOR CURRENT_USER()`` that would let it write or alter a business table (on ``*.*``,
``db.*`` or the table), password hashes masked. `searchsync config check --grants` prints it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import aiomysql

from searchsync.mysql.pool import fetch_all

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
