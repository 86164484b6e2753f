"""Every SQL text searchsync sends, per server family:

- the texts of the package (every string literal of ``consumer/searchsync`` and the packaged
  migrations) hold no syntax only one family knows, except in `searchsync.mysql.dialect`, the one
  place that chooses texts by family;
- the texts the code sends where the family matters, recorded from a fake server of each family:
  the pool's session and probe, a transaction, the packed reads of the truth and the repair
  scan; MySQL gets hints and no ``SET STATEMENT``, MariaDB the reverse, neither ``tx_isolation``.

The same MariaDB texts run on the real server in tests/integration/test_dialect_real.py.
"""

from __future__ import annotations

import ast
import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiomysql
import pytest
from searchsync.errors import ConfigError
from searchsync.mysql import truth_buckets, truth_relations
from searchsync.mysql.dialect import ISOLATION, SERVER_PROBE, TIME_ZONE
from searchsync.mysql.pool import create_pool, dialect_of, transaction
from searchsync.mysql.schema import migrations
from searchsync.projection import Child, default_registry

from tests.fakes.recording_mysql import RecordingPool

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "consumer" / "searchsync"
DIALECT = PACKAGE / "mysql" / "dialect.py"

# syntax one family lacks -> who has it
FAMILY_ONLY: dict[str, str] = {
    r"tx_isolation": "MariaDB and MySQL 5.7 only",
    r"transaction_isolation": "MySQL and MariaDB 11.1+ only",
    r"SET STATEMENT": "MariaDB only",
    r"max_statement_time": "MariaDB only",
    r"MAX_EXECUTION_TIME": "MySQL only",
    r"SET_VAR": "MySQL only",
    r"/\*\+": "MySQL only (MariaDB 10.x ignores optimizer hints)",
    r"BINLOG MONITOR": "MariaDB only",
    r"REPLICATION CLIENT": "MySQL only (MariaDB 10.5+ calls it BINLOG MONITOR)",
    r"\bRETURNING\b": "MariaDB only",
    r"CREATE OR REPLACE": "MariaDB only (tables)",
    r"\b(ADD|DROP) (COLUMN|INDEX|KEY) IF (NOT )?EXISTS": "MariaDB only",
    r"\bJSON_(DETAILED|EQUALS|NORMALIZE|EXISTS|LOOSE|COMPACT)\b": "MariaDB only",
    r"\b(NEXTVAL|LASTVAL|SETVAL)\b": "MariaDB sequences only",
    r"ROWS EXAMINED": "MariaDB only",
}


def literals(path: Path) -> Iterator[tuple[int, str]]:
    """Each string literal of `path` that is not a docstring, with its line (an f-string's
    literal parts joined with ``{}``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    parts_of_fstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                parts_of_fstrings.add(id(value))
                parts.append(value.value if isinstance(value, ast.Constant) else "{}")
            yield node.lineno, "".join(str(p) for p in parts)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and id(node) not in parts_of_fstrings
        ):
            yield node.lineno, node.value


def family_only(text: str) -> list[str]:
    return [f"{m[0]!r}: {who}" for p, who in FAMILY_ONLY.items() if (m := re.search(p, text))]


def test_every_text_outside_the_dialect_is_valid_on_both_families() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}: {problem}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != DIALECT
        for line, text in literals(path)
        for problem in family_only(text)
    ]
    found += [f"{m.name}: {p}" for m in migrations() for p in family_only(m.sql)]
    assert found == []


def test_the_audit_sees_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""SET STATEMENT in a docstring is prose."""\n'
        "A = \"SET SESSION tx_isolation = 'READ-COMMITTED'\"\n"
        'B = f"SET STATEMENT group_concat_max_len = {n} FOR SELECT 1"\n'
        "C = 'INSERT INTO t VALUES (1) RETURNING id'\n",
        encoding="utf-8",
    )
    problems = [p for _, text in literals(sample) for p in family_only(text)]
    assert len(problems) == 3 and "tx_isolation" in problems[0]
    assert sum(bool(family_only(text)) for _, text in literals(DIALECT)) >= 4


CHILD = Child("tags", "article_tag", key="article_id", columns=("article_id", "tag"), order_by=())


async def _send_everything(flavor: str, monkeypatch: pytest.MonkeyPatch) -> RecordingPool:
    """Drive each place whose text depends on the family against a fake server of `flavor`."""
    made: list[RecordingPool] = []

    async def fake_create_pool(**kwargs: Any) -> RecordingPool:
        made.append(RecordingPool(flavor, **kwargs))
        return made[-1]

    monkeypatch.setattr(aiomysql, "create_pool", fake_create_pool)
    pool: Any = await create_pool(host="h", port=3306, user="u", password="p", database="d")
    (server,) = made
    assert server.driver_kwargs["init_command"] == TIME_ZONE
    for _ in range(2):  # the session is set up once per connection
        async with transaction(pool) as conn:
            assert dialect_of(conn).flavor == flavor
    server.connection.answers.append([(0, None)])
    async with transaction(pool) as conn:
        assert await truth_relations._read_packed(conn, CHILD, ["a1", "a2"]) == []
    projector = default_registry().get("wiki_page")
    server.connection.answers.append([(0, None)])
    light = await truth_buckets.bucket_page(
        pool,
        projector,
        0,
        1 << 16,
        None,
        100,
        content=False,
        sync_hash_column=False,
        id_prefix="",
        packing={},
    )
    assert light == []
    return server


@pytest.mark.parametrize("flavor", ["mysql", "mariadb"])
def test_the_texts_sent_to_each_family(flavor: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sent = asyncio.run(_send_everything(flavor, monkeypatch)).statements
    assert sent[:4] == [TIME_ZONE, SERVER_PROBE, ISOLATION, "BEGIN"]
    assert sent.count(ISOLATION) == 1
    packed = [s for s in sent if "GROUP_CONCAT" in s or "JSON_ARRAYAGG" in s]
    assert len(packed) == 2
    for text in sent:
        assert "tx_isolation" not in text and "transaction_isolation" not in text
    if flavor == "mysql":
        assert all(s.startswith("SELECT /*+ SET_VAR(group_concat_max_len = ") for s in packed)
        assert not [s for s in sent if "SET STATEMENT" in s or "max_statement_time" in s]
    else:
        assert all(s.startswith("SET STATEMENT group_concat_max_len = ") for s in packed)
        assert not [s for s in sent if "/*+" in s]
    other = "MySQL" if flavor == "mariadb" else "MariaDB"
    assert [p for s in sent for p in family_only(s) if p.split(": ", 1)[1].startswith(other)] == []


@pytest.mark.parametrize(("configured", "server"), [("mysql", "mariadb"), ("mariadb", "mysql")])
def test_a_configured_family_the_server_is_not_stops_start_up(
    configured: str, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[RecordingPool] = []

    async def fake_create_pool(**kwargs: Any) -> RecordingPool:
        made.append(RecordingPool(server, **kwargs))
        return made[-1]

    monkeypatch.setattr(aiomysql, "create_pool", fake_create_pool)
    kwargs = {"host": "h", "port": 3306, "user": "u", "password": "p", "database": "d"}
    with pytest.raises(ConfigError) as caught:
        asyncio.run(create_pool(**kwargs, flavor=configured))
    assert caught.value.key == "mysql.flavor" and caught.value.got == configured
    assert f"auto or {server}" in caught.value.expected
    assert made[0].closed
    with pytest.raises(ConfigError, match=r"mysql\.flavor"):
        asyncio.run(create_pool(**kwargs, flavor="oracle"))
    asyncio.run(create_pool(**kwargs, flavor=server))  # the right family connects


def test_a_pool_made_elsewhere_speaks_its_servers_family() -> None:
    for flavor in ("mysql", "mariadb"):
        conn = RecordingPool(flavor).connection
        assert dialect_of(conn).flavor == flavor  # from the handshake: no round trip
        assert conn.statements == []


def test_a_lazy_pool_asks_the_server_before_its_first_transaction(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[RecordingPool] = []

    async def fake_create_pool(**kwargs: Any) -> RecordingPool:
        made.append(RecordingPool("mariadb", **kwargs))
        return made[-1]

    async def go() -> None:
        kwargs = {"host": "h", "port": 3306, "user": "u", "password": "p", "database": "d"}
        pool: Any = await create_pool(**kwargs, minsize=0, flavor="mysql")  # connects nothing
        assert SERVER_PROBE not in made[0].statements
        with pytest.raises(ConfigError, match=r"mysql\.flavor: expected auto or mariadb"):
            async with transaction(pool):
                pass
        assert made[0].statements[-1] == SERVER_PROBE

    monkeypatch.setattr(aiomysql, "create_pool", fake_create_pool)
    asyncio.run(go())
