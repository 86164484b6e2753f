"""`searchsync index list / rollback / drop` through ``main(argv, runtime=...)`` on the
in-memory index admin (docs/design.md, "Schema fence")."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from runtime_fakes import Fakes, search_of
from searchsync.cli import main
from searchsync.exit_codes import ExitCode

from tests.fakes.search_index import InMemoryIndex
from tests.fakes.search_state import StoredDoc

ALIAS = "searchsync_wiki_page"
V1, V2, V3 = f"{ALIAS}_v1", f"{ALIAS}_v2", f"{ALIAS}_v3"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("SEARCHSYNC_"):
            monkeypatch.delenv(name)
    yield


def _index(*versions: int, writes_to: int, docs: dict[int, int] | None = None) -> InMemoryIndex:
    """``<alias>_v<N>`` for each N (schema version N + 1), the alias writing to `writes_to`."""
    es = InMemoryIndex()

    async def build() -> None:
        for n in versions:
            meta = {"projection_schema_version": n + 1}
            await es.admin.create_index(f"{ALIAS}_v{n}", {"mappings": {}}, meta=meta)
        await es.admin.put_alias(ALIAS, f"{ALIAS}_v{writes_to}")

    asyncio.run(build())
    for n, count in (docs or {}).items():
        for i in range(count):
            es.indices[f"{ALIAS}_v{n}"].docs[f"d{i}"] = StoredDoc(1, {})
    return es


def _run(es: InMemoryIndex, *argv: str) -> int:
    return main(list(argv), runtime=Fakes(search=search_of(admin=es.admin)))


def _json(capsys: pytest.CaptureFixture[str]) -> Any:
    return orjson.loads(capsys.readouterr().out)


# --- list ---------------------------------------------------------------------------------------


def test_list_shows_every_index_its_docs_schema_and_role(
    capsys: pytest.CaptureFixture[str],
) -> None:
    es = _index(1, 2, writes_to=2, docs={1: 3, 2: 5})
    assert _run(es, "index", "list", "--json") == ExitCode.OK
    [listing] = _json(capsys)
    assert listing["alias"] == ALIAS and listing["write_index"] == V2
    rows = {row["name"]: row for row in listing["indices"]}
    assert (rows[V1]["docs"], rows[V1]["schema_version"], rows[V1]["aliased"]) == (3, 2, False)
    assert (rows[V2]["docs"], rows[V2]["schema_version"], rows[V2]["is_write_index"]) == (
        5,
        3,
        True,
    )
    assert rows[V1]["created_at"]
    assert _run(es, "index", "list", "--type", "wiki_page") == ExitCode.OK
    text = capsys.readouterr().out
    assert V1 in text and V2 in text and "write" in text


def test_list_of_a_missing_alias_says_how_to_create_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(InMemoryIndex(), "index", "list") == ExitCode.OK
    assert "searchsync index init --type wiki_page" in capsys.readouterr().out


def test_list_of_an_unknown_type_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(InMemoryIndex(), "index", "list", "--type", "nope") == ExitCode.USAGE
    assert "unknown aggregate type 'nope'" in capsys.readouterr().err


# --- rollback -----------------------------------------------------------------------------------


def test_rollback_swaps_to_the_highest_index_below_the_write_index(
    capsys: pytest.CaptureFixture[str],
) -> None:
    es = _index(1, 2, 3, writes_to=3)
    for plan_only in (["--dry-run"], []):  # a plan by default
        assert _run(es, "index", "rollback", *plan_only, "--json") == ExitCode.OK
        plan = _json(capsys)
        assert (plan["from"], plan["to"], plan["dry_run"]) == (V3, V2, True)
        assert es.alias_target(ALIAS) == V3  # a plan changes nothing
    assert _run(es, "index", "rollback") == ExitCode.OK
    captured = capsys.readouterr()
    assert "add --execute to act" in captured.err and es.alias_target(ALIAS) == V3
    assert _run(es, "index", "rollback", "--execute", "--json") == ExitCode.OK
    done = _json(capsys)
    assert (done["from"], done["to"]) == (V3, V2)
    assert (done["from_schema_version"], done["to_schema_version"]) == (4, 3)
    assert "fenced" in done["message"] and V3 in done["message"]
    assert es.aliases[ALIAS] == {V2: True}  # one write index, the old one kept but not aliased
    assert V3 in es.indices


def test_rollback_to_a_named_index(capsys: pytest.CaptureFixture[str]) -> None:
    es = _index(1, 2, 3, writes_to=3)
    assert _run(es, "index", "rollback", "--to", V1, "--execute") == ExitCode.OK
    assert es.alias_target(ALIAS) == V1
    assert f"to {V1}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["--to", "other_v1"], ExitCode.USAGE, "not a physical index of"),
        (["--to", f"{ALIAS}_v9"], ExitCode.USAGE, "no index"),
        (["--to", V2], ExitCode.FAILURE, "already writes to"),
    ],
)
def test_rollback_refusals_say_what_to_do(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: ExitCode, says: str
) -> None:
    es = _index(1, 2, writes_to=2)
    assert _run(es, "index", "rollback", *argv, "--execute") == code
    assert says in capsys.readouterr().err
    assert es.alias_target(ALIAS) == V2


def test_rollback_without_an_earlier_index_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    es = _index(1, writes_to=1)
    assert _run(es, "index", "rollback", "--execute") == ExitCode.FAILURE
    assert "--to" in capsys.readouterr().err
    assert es.alias_target(ALIAS) == V1


# --- drop ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("plan_only", [["--dry-run"], []])
def test_drop_plans_by_default(capsys: pytest.CaptureFixture[str], plan_only: list[str]) -> None:
    es = _index(1, 2, writes_to=2, docs={1: 4})
    assert _run(es, "index", "drop", V1, *plan_only, "--json") == ExitCode.OK
    plan = _json(capsys)
    assert (plan["index"], plan["docs"], plan["dry_run"]) == (V1, 4, True)
    assert V1 in es.indices


def test_drop_with_execute_deletes_an_old_index(capsys: pytest.CaptureFixture[str]) -> None:
    es = _index(1, 2, writes_to=2)
    assert _run(es, "index", "drop", V1, "--execute") == ExitCode.OK
    assert V1 not in es.indices and es.alias_target(ALIAS) == V2
    assert f"deleted {V1}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [
        (V2, ExitCode.FAILURE, "writes to"),  # the alias's write index
        (V1, ExitCode.FAILURE, "reads from"),  # the alias also points at it (reads)
        ("something_else_v1", ExitCode.USAGE, "not <alias>_v<N> of a known aggregate type"),
        (ALIAS, ExitCode.USAGE, "not <alias>_v<N>"),
        (f"{ALIAS}_v7", ExitCode.USAGE, "no index"),
    ],
)
def test_drop_refusals(
    capsys: pytest.CaptureFixture[str], name: str, code: ExitCode, says: str
) -> None:
    es = _index(1, 2, writes_to=2)
    es.aliases[ALIAS][V1] = False  # V1 stays behind the alias for reads
    assert _run(es, "index", "drop", name, "--execute") == code
    assert says in capsys.readouterr().err
    assert {V1, V2} <= set(es.indices)
