"""The two server families searchsync speaks to, MySQL (8.0, 8.4) and MariaDB (10.6+), and the one
place that chooses a statement's text by family. Everything else searchsync sends is valid on
both; the texts here are those that cannot be:

- a per-statement setting: MariaDB's ``SET STATEMENT var = value FOR SELECT ...``, MySQL's
  ``SELECT /*+ SET_VAR(var = value) */ ...`` optimizer hint;
- the Debezium user's global grants: ``BINLOG MONITOR`` on MariaDB (10.5 renamed ``REPLICATION
  CLIENT`` to it), ``REPLICATION CLIENT`` on MySQL.

The session's settings are the same on both: the UTC time zone (`TIME_ZONE`, as each connection
opens) and READ COMMITTED through ``SET SESSION TRANSACTION ISOLATION LEVEL`` (`ISOLATION`, once
per connection before its first transaction): ``tx_isolation`` is gone from MySQL 8 and
``transaction_isolation`` is missing from MariaDB before 11.1."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

Flavor = Literal["mysql", "mariadb"]
FLAVORS: Final[tuple[Flavor, ...]] = get_args(Flavor)
"""The families; ``[mysql] flavor`` (`searchsync.config.MYSQL_FLAVORS`) is one of them or auto."""
DEFAULT_FLAVOR: Final[Flavor] = "mariadb"
"""What `searchsync schema ... --flavor` prints when neither the option nor the config says."""

SERVER_PROBE: Final = "SELECT VERSION(), @@version_comment"
"""What the pool asks the server once it connects: both answer it, MariaDB names itself in both."""
TIME_ZONE: Final = "SET SESSION time_zone = '+00:00'"
"""Each connection's first statement (the driver's ``init_command``)."""
ISOLATION: Final = "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
"""Each connection's statement before its first transaction (`mysql.pool.transaction`)."""
SNAPSHOT: Final = (
    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    "START TRANSACTION READ ONLY, WITH CONSISTENT SNAPSHOT",
)
"""A read of several statements that must agree (a root row and its children): the next
transaction only runs REPEATABLE READ, read-only, with its snapshot taken at its start, on both
families (`mysql.pool.transaction(snapshot=True)`)."""

_DEBEZIUM_GLOBAL: Final[dict[Flavor, str]] = {
    "mysql": "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT",
    "mariadb": "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR",
}


def flavor_of(version: str, comment: str | None = None) -> Flavor:
    """The family of a server from its ``VERSION()`` (or the handshake's version string) and
    ``@@version_comment``: MariaDB names itself in one of them (``10.11.6-MariaDB-0+deb12u1``,
    ``mariadb.org binary distribution``); anything else is MySQL (Percona, Aurora MySQL too)."""
    return "mariadb" if "mariadb" in f"{version} {comment or ''}".lower() else "mysql"


def parse_flavor(value: str) -> Flavor:
    """`value` as a `Flavor` (case-insensitive); ValueError naming the accepted values."""
    flavor = value.strip().lower()
    if flavor in FLAVORS:
        return flavor
    raise ValueError(f"{value!r}: want one of {', '.join(FLAVORS)}")


@dataclass(frozen=True, slots=True)
class Dialect:
    """The statement texts of one server family."""

    flavor: Flavor

    def select(self, sql: str, *, group_concat_max_len: int | None = None) -> str:
        """`sql` (a ``SELECT ...``) with the longest ``GROUP_CONCAT``/``JSON_ARRAYAGG`` result set
        for this statement alone, in the family's own syntax; unchanged when it is not given."""
        if not sql.startswith("SELECT "):
            raise ValueError(f"a per-statement setting needs a SELECT, got {sql[:40]!r}")
        if group_concat_max_len is None:
            return sql
        limit = group_concat_max_len
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"want a positive integer, got {limit!r}")
        setting = f"group_concat_max_len = {limit}"
        if self.flavor == "mariadb":
            return f"SET STATEMENT {setting} FOR {sql}"
        return f"SELECT /*+ SET_VAR({setting}) */ {sql[len('SELECT ') :]}"

    def debezium_global_privileges(self) -> str:  # to read the binlog
        return _DEBEZIUM_GLOBAL[self.flavor]
