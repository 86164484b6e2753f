"""MySQL 8 and MariaDB, one code path: the server family is read from what the server says, and
every text `searchsync.mysql.dialect` chooses is the family's own syntax (per-statement settings,
time limits, Debezium's grants). Texts sent to a server, recorded from the code that sends them:
`tests/unit/test_dialect_statements.py`."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.config import MYSQL_FLAVORS, load_settings
from searchsync.errors import ConfigError
from searchsync.mysql.dialect import (
    DEFAULT_FLAVOR,
    FLAVORS,
    ISOLATION,
    SERVER_PROBE,
    TIME_ZONE,
    Dialect,
    flavor_of,
    parse_flavor,
)

MYSQL, MARIADB = Dialect("mysql"), Dialect("mariadb")


@pytest.mark.parametrize(
    ("version", "comment", "flavor"),
    [
        ("10.11.19-MariaDB-0+deb12u1-log", "Debian 12", "mariadb"),
        ("5.5.5-10.6.12-MariaDB-log", None, "mariadb"),  # an older handshake's prefix
        ("11.4.2-MariaDB", "mariadb.org binary distribution", "mariadb"),
        ("10.6.16", "MariaDB Server", "mariadb"),  # named only in the comment
        ("8.0.36", "MySQL Community Server - GPL", "mysql"),
        ("8.4.0-commercial", "MySQL Enterprise Server - Commercial", "mysql"),
        ("8.0.35-27", "Percona Server (GPL), Release 27, Revision 2f8eeab2", "mysql"),
        ("8.0.mysql_aurora.3.05.2", "Source distribution", "mysql"),
    ],
)
def test_the_family_is_the_one_the_server_names(
    version: str, comment: str | None, flavor: str
) -> None:
    assert flavor_of(version, comment) == flavor


def test_the_setting_is_auto_or_a_family() -> None:
    assert ("auto", *FLAVORS) == MYSQL_FLAVORS
    assert FLAVORS == ("mysql", "mariadb") and DEFAULT_FLAVOR == "mariadb"
    assert load_settings({}).mysql.flavor == "auto"
    assert load_settings({"SEARCHSYNC_MYSQL_FLAVOR": "MySQL"}).mysql.flavor == "mysql"
    with pytest.raises(ConfigError, match=r"mysql\.flavor: expected one of auto, mysql, mariadb"):
        load_settings({"SEARCHSYNC_MYSQL_FLAVOR": "postgres"})
    assert parse_flavor(" MariaDB ") == "mariadb"
    with pytest.raises(ValueError, match="mysql, mariadb"):
        parse_flavor("auto")


def test_the_session_texts_are_valid_on_both() -> None:
    assert ISOLATION == "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"
    assert TIME_ZONE == "SET SESSION time_zone = '+00:00'"
    assert SERVER_PROBE == "SELECT VERSION(), @@version_comment"


def test_a_per_statement_setting_in_each_familys_syntax() -> None:
    sql = "SELECT COUNT(*), GROUP_CONCAT(`id`) FROM (SELECT `id` FROM `t`) AS page"
    assert MARIADB.select(sql, group_concat_max_len=4096) == (
        f"SET STATEMENT group_concat_max_len = 4096 FOR {sql}"
    )
    assert MYSQL.select(sql, group_concat_max_len=4096) == (
        "SELECT /*+ SET_VAR(group_concat_max_len = 4096) */ COUNT(*), GROUP_CONCAT(`id`)"
        " FROM (SELECT `id` FROM `t`) AS page"
    )
    assert MYSQL.select(sql) == MARIADB.select(sql) == sql


@pytest.mark.parametrize(
    ("sql", "settings"),
    [
        ("UPDATE t SET a = 1", {"group_concat_max_len": 5}),  # MySQL's hints: SELECTs only
        (" SELECT 1", {"group_concat_max_len": 5}),
        ("SELECT 1", {"group_concat_max_len": 0}),
        ("SELECT 1", {"group_concat_max_len": -1}),
        ("SELECT 1", {"group_concat_max_len": True}),
    ],
)
def test_a_setting_refuses_what_it_cannot_say(sql: str, settings: dict[str, int]) -> None:
    for dialect in (MYSQL, MARIADB):
        with pytest.raises(ValueError):
            dialect.select(sql, **settings)


@given(
    body=st.text(alphabet="abc `*(),=_0123456789", min_size=1, max_size=40),
    length=st.none() | st.integers(1, 1 << 40),
)
def test_each_family_gets_only_its_own_syntax(body: str, length: int | None) -> None:
    sql = f"SELECT {body}"
    mysql = MYSQL.select(sql, group_concat_max_len=length)
    mariadb = MARIADB.select(sql, group_concat_max_len=length)
    assert "SET STATEMENT" not in mysql
    assert "/*+" not in mariadb
    if length is None:
        assert mysql == mariadb == sql
        return
    assert mariadb.startswith("SET STATEMENT ") and mariadb.endswith(f" FOR {sql}")
    hint, _, rest = mysql.partition(" */ ")
    assert hint.startswith("SELECT /*+ ") and f"SELECT {rest}" == sql
    assert f"SET_VAR(group_concat_max_len = {length})" in hint
    assert f"group_concat_max_len = {length} FOR" in mariadb


def test_debeziums_grants_as_each_family_names_them() -> None:
    assert MYSQL.debezium_global_privileges() == (
        "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT"
    )
    assert MARIADB.debezium_global_privileges() == (
        "SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, BINLOG MONITOR"
    )
