"""`searchsync config check --connect` and `projection show` on the real stack: a projector module
of a team's own (a file on PYTHONPATH) read against MariaDB's ``information_schema``, one real
row projected against its mapping, the mapping tried on Elasticsearch."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import orjson
import pymysql
import pytest

from tests.integration.conftest import ES_URL, KAFKA
from tests.integration.conftest_mysql import MysqlTarget, pymysql_connection

pytestmark = [pytest.mark.integration]

MODULE = """
from searchsync.projection import Projector

def build(row):
    fields = {"title": row["title"], "is_deleted": row["deleted_at"] is not None}
    fields.update(EXTRA)
    return fields

def projectors():
    return [Projector(
        aggregate_type="wiki_page",
        schema_version=1,
        table="wiki_page",
        columns=COLUMNS,
        build=build,
        mapping={"mappings": {"dynamic": "strict", "properties": PROPERTIES}},
    )]
"""


def _check(tmp_path: Path, *argv: str, **module: object) -> subprocess.CompletedProcess[str]:
    name = f"team_projectors_{uuid.uuid4().hex[:8]}"
    values = {
        "COLUMNS": ("id", "title", "revision", "deleted_at"),
        "EXTRA": {},
        "PROPERTIES": {"title": {"type": "text"}},
    } | module
    header = "".join(f"{k} = {v!r}\n" for k, v in values.items())
    (tmp_path / f"{name}.py").write_text(header + textwrap.dedent(MODULE))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEARCHSYNC_")}
    env |= {
        "PYTHONPATH": str(tmp_path),
        "SEARCHSYNC_PROJECTION_MODULES": name,
        "SEARCHSYNC_KAFKA_BOOTSTRAP_SERVERS": KAFKA,
        "SEARCHSYNC_ELASTICSEARCH_HOSTS": ES_URL,
        "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"itcc{uuid.uuid4().hex[:8]}",
    }
    return subprocess.run(
        [sys.executable, "-m", "searchsync", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _refused(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 2, done.stderr
    assert "config ok" not in done.stdout
    return [line for line in done.stderr.splitlines() if line.startswith("config refused: ")]


def test_a_correct_projector_passes_and_projects_a_real_row(tmp_path: Path) -> None:
    done = _check(tmp_path, "config", "check", "--connect")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("config ok")
    assert "wiki_page: row " in done.stdout and " projects" in done.stdout


def test_a_missing_column_is_refused_naming_it(tmp_path: Path) -> None:
    columns = ("id", "title", "subtitle", "revision", "deleted_at")
    assert _refused(_check(tmp_path, "config", "check", "--connect", COLUMNS=columns)) == [
        "config refused: wiki_page: table wiki_page has no column subtitle: add it to the table,"
        " or remove it from the projector's columns"
    ]


def test_a_build_field_outside_the_mapping_is_refused(tmp_path: Path) -> None:
    done = _check(tmp_path, "config", "check", "--connect", EXTRA={"summary": "s"})
    assert _refused(done) == [
        "config refused: wiki_page: build() returns summary, which the mapping lacks: add it to"
        " the mapping's properties"
    ]


def test_a_mapping_needing_a_module_the_engine_lacks_names_the_module(tmp_path: Path) -> None:
    properties = {
        "title": {"type": "text"},
        "price": {"type": "scaled_float", "scaling_factor": 100},
    }
    (line,) = _refused(_check(tmp_path, "config", "check", "--connect", PROPERTIES=properties))
    assert line.startswith(
        "config refused: wiki_page: the search engine lacks the module mapper-extras (field type"
        " [scaled_float] (on field [price]) in the mapping)"
    )
    init = _check(tmp_path, "index", "init", PROPERTIES=properties)
    assert init.returncode == 1
    assert "lacks the module mapper-extras" in init.stderr.splitlines()[0]


def test_projection_show_prints_one_rows_document_and_exits_1_without_one(
    tmp_path: Path, mysql_target: MysqlTarget
) -> None:
    page = f"cc-{uuid.uuid4().hex[:10]}"
    conn: pymysql.Connection = pymysql_connection(mysql_target)  # type: ignore[type-arg]
    try:
        with conn.cursor() as cur:
            cur.execute(
                "INSERT INTO wiki_page (id, title, content, relations_json, revision, updated_at)"
                " VALUES (%s, 'Shown', 'c', '{}', 4, UTC_TIMESTAMP(6))",
                (page,),
            )
        conn.commit()
    finally:
        conn.close()
    try:
        shown = _check(tmp_path, "projection", "show", "--id", page)
    finally:  # a row without an outbox event: keep it out of the shared table
        conn = pymysql_connection(mysql_target)
        try:
            with conn.cursor() as cur:
                cur.execute("DELETE FROM wiki_page WHERE id = %s", (page,))
            conn.commit()
        finally:
            conn.close()
    assert shown.returncode == 0, shown.stderr
    document = orjson.loads(shown.stdout)
    assert (document["id"], document["title"], document["source_revision"]) == (page, "Shown", 4)
    missing = _check(tmp_path, "projection", "show", "--id", f"{page}-none")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith(f"wiki_page {page}-none: missing: no wiki_page row")
