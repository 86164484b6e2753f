"""`searchsync config check`'s refusals (`searchsync.ops.setup_check`): each finding one line
that names the fix."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from searchsync.cli import main
from searchsync.config import load_settings
from searchsync.errors import ErrorCode, IndexAdminError, PoisonMessage
from searchsync.exit_codes import ExitCode
from searchsync.ops import setup_check
from searchsync.projection import Child, Lookup, Projector, ProjectorRegistry, Row
from searchsync.projection.mapping import mapping_gaps
from searchsync.projection.topics import consumed_topics, subscription
from searchsync.search.engine_modules import missing_module

from tests.fakes.table_schema import FakeTableSchema
from tests.fakes.truth import FakeTruth

FIELDS = {"title": {"type": "text"}}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("SEARCHSYNC_"):
            monkeypatch.delenv(name)
    yield


def build(row: Row) -> dict[str, Any]:
    return {"title": row["title"], "is_deleted": row["deleted_at"] is not None}


def note(aggregate_type: str = "note", **overrides: Any) -> Projector:
    fields: dict[str, Any] = {
        "aggregate_type": aggregate_type,
        "schema_version": 1,
        "table": aggregate_type,
        "columns": ("id", "title", "revision", "deleted_at"),
        "build": build,
        "mapping": {"mappings": {"dynamic": "strict", "properties": FIELDS}},
    }
    fields.update(overrides)
    return Projector(**fields)


def registry(*projectors: Projector) -> ProjectorRegistry:
    found = ProjectorRegistry()
    for projector in projectors:
        found.register(projector)
    return found


# -- topics ------------------------------------------------------------------------------------


def test_topics_follow_the_registered_types_by_default() -> None:
    settings = load_settings({"SEARCHSYNC_RELAY_TOPIC_TEMPLATE": "shop.{type}.events"})
    assert consumed_topics(settings, ["note", "product"]) == (
        "shop.note.events",
        "shop.product.events",
    )
    assert setup_check.static_findings(settings, registry(note(), note("product"))) == []


def test_topics_that_miss_a_registered_type_are_refused_naming_the_fix() -> None:
    settings = load_settings({"SEARCHSYNC_KAFKA_TOPICS": "outbox.event.note"})
    found = setup_check.static_findings(settings, registry(note(), note("product")))
    assert found == [
        "kafka.topics misses outbox.event.product, the topic of the type 'product'"
        " (relay.topic_template): add it, or unset kafka.topics to read one topic per"
        " registered type"
    ]


def test_topics_naming_a_topic_no_type_writes_are_refused() -> None:
    settings = load_settings({"SEARCHSYNC_KAFKA_TOPICS": "outbox.event.note,outbox.event.old"})
    (found,) = setup_check.static_findings(settings, registry(note()))
    assert found.startswith("kafka.topics names outbox.event.old, which no registered or")
    assert found.endswith("remove it, or register its type in projection.modules")


def test_the_topics_of_types_a_lookup_references_are_read_too() -> None:
    settings = load_settings({"SEARCHSYNC_PROJECTION_MODULES": "searchsync.examples.article"})
    assert consumed_topics(settings) == ("outbox.event.article", "outbox.event.author")
    listed = load_settings({"SEARCHSYNC_KAFKA_TOPICS": "outbox.event.note"})
    referencing = registry(tagged())
    (found,) = setup_check.static_findings(listed, referencing)
    assert found.startswith("kafka.topics misses outbox.event.author, the topic of the type")
    assert setup_check.static_findings(load_settings({}), referencing) == []


def test_a_regex_that_misses_a_registered_type_is_refused() -> None:
    settings = load_settings({"SEARCHSYNC_KAFKA_TOPIC_REGEX": r"^outbox\.event\.note$"})
    assert subscription(settings, ["note"]) == [r"^outbox\.event\.note$"]
    (found,) = setup_check.static_findings(settings, registry(note(), note("product")))
    assert "does not match outbox.event.product" in found and "widen the regex" in found


def test_config_check_refuses_wrong_topics_with_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_KAFKA_TOPICS", "outbox.event.article")
    assert main(["config", "check"]) == ExitCode.USAGE
    captured = capsys.readouterr()
    refused = [line for line in captured.err.splitlines() if line.startswith("config refused")]
    assert refused == [
        "config refused: kafka.topics misses outbox.event.wiki_page, the topic of the type"
        " 'wiki_page' (relay.topic_template): add it, or unset kafka.topics to read one topic"
        " per registered type",
        "config refused: kafka.topics names outbox.event.article, which no registered or"
        " referenced type writes (relay.topic_template 'outbox.event.{type}'): remove it, or"
        " register its type in projection.modules",
    ]
    assert "config ok" not in captured.out


def test_config_check_of_the_defaults_is_ok_and_says_the_topics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "check"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.rstrip().endswith("config ok")
    assert main(["config", "check", "--json"]) == ExitCode.OK
    report = capsys.readouterr().out
    assert '"consumed_topics": [\n    "outbox.event.wiki_page"\n  ]' in report
    assert '"findings": []' in report


# -- modules -----------------------------------------------------------------------------------


def test_an_unimportable_module_is_refused_cause_first_with_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEARCHSYNC_PROJECTION_MODULES", "myshop_not_installed.search")
    assert main(["config", "check"]) == ExitCode.USAGE
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(
        "config error: projection.modules: 'myshop_not_installed.search': no module named"
        " 'myshop_not_installed': install the package"
    )
    assert "pip install" in first and "PYTHONPATH" in first


def test_a_module_whose_own_import_is_missing_names_that_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "shop_needs_dep.py").write_text("import not_a_real_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SEARCHSYNC_PROJECTION_MODULES", "shop_needs_dep")
    try:
        assert main(["config", "check"]) == ExitCode.USAGE
    finally:
        sys.modules.pop("shop_needs_dep", None)
    first = capsys.readouterr().err.splitlines()[0]
    assert "importing 'shop_needs_dep' needs 'not_a_real_dependency_xyz'" in first


def test_a_module_raising_a_multi_line_error_shows_its_first_line_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = 'raise RuntimeError("DSN missing\\n  at line 2\\n  at line 3")\n'
    (tmp_path / "shop_raises.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SEARCHSYNC_PROJECTION_MODULES", "shop_raises")
    try:
        assert main(["config", "check"]) == ExitCode.USAGE
    finally:
        sys.modules.pop("shop_raises", None)
    first = capsys.readouterr().err.splitlines()[0]
    assert first == (
        "config error: projection.modules: 'shop_raises': importing 'shop_raises' raised"
        " RuntimeError: DSN missing"
    )


# -- mapping -----------------------------------------------------------------------------------


def test_a_mapping_that_is_not_strict_is_refused_unless_the_projector_says_so() -> None:
    loose = {"mappings": {"properties": FIELDS}}
    settings = load_settings({})
    (found,) = setup_check.static_findings(settings, registry(note(mapping=loose)))
    assert found.startswith("mapping of note is not dynamic: strict")
    assert "Projector(dynamic_mapping=True)" in found
    allowed = note(mapping=loose, dynamic_mapping=True)
    assert setup_check.static_findings(settings, registry(allowed)) == []


def test_mapping_gaps_follow_dynamic_down_the_objects() -> None:
    mapping = {
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "title": {"type": "text"},
                "attrs": {"type": "object", "dynamic": True},
                "images": {"type": "nested", "properties": {"url": {"type": "keyword"}}},
            },
        }
    }
    document = {
        "title": "t",
        "price": 1,
        "attrs": {"anything": 1},
        "images": [{"url": "u", "alt": "a"}, {"url": "v"}],
    }
    assert mapping_gaps(mapping, document) == ["images.alt", "price"]
    assert mapping_gaps({"mappings": {"properties": {}}}, document) == []  # dynamic: true


def test_a_build_field_outside_the_mapping_is_refused_from_a_real_row() -> None:
    def build_more(row: Row) -> dict[str, Any]:
        return {**build(row), "price": "9.90", "stock": 3}

    projector = note(build=build_more)
    truth = FakeTruth()
    truth.put({"id": "n1", "title": "a", "revision": 1, "deleted_at": None}, table="note")
    report = asyncio.run(setup_check.sample_report(projector, truth))
    assert report.sample_id == "n1"
    assert report.findings == [
        "note: build() returns price, stock, which the mapping lacks: add them to the mapping's"
        " properties"
    ]


def test_an_empty_table_is_said_and_a_row_that_cannot_be_projected_is_refused() -> None:
    truth = FakeTruth()
    report = asyncio.run(setup_check.sample_report(note(), truth))
    assert report.empty and report.findings == []
    assert list(setup_check.lines([report])) == ["note: table is empty: no row projected"]

    def refuse(row: Row) -> dict[str, Any]:
        raise PoisonMessage(ErrorCode.PROJECTION_ERROR, "title must be a string")

    truth.put({"id": "n1", "title": 5, "revision": 1, "deleted_at": None}, table="note")
    report = asyncio.run(setup_check.sample_report(note(build=refuse), truth))
    (found,) = report.findings
    assert found.startswith("note: row n1 cannot be projected: title must be a string")


# -- the database ------------------------------------------------------------------------------

TAGS = Child("tags", "note_tag", key="note_id", columns=("note_id", "tag"), order_by=("tag",))
AUTHOR = Lookup(
    "author", "author", via="author_id", columns=("id", "name"), aggregate_type="author"
)


def tagged() -> Projector:
    return note(
        columns=("id", "title", "author_id", "revision", "deleted_at"),
        children=(TAGS,),
        lookups=(AUTHOR,),
    )


def test_missing_tables_and_columns_are_refused_naming_the_fix() -> None:
    schema = FakeTableSchema(
        {"note": {"id", "title", "revision", "deleted_at"}, "author": {"id", "name"}},
        {"note": [("author_id", "id")]},
    )
    found = asyncio.run(setup_check.schema_findings(tagged(), schema))
    assert found == [
        "note: table note has no column author_id: add it to the table, or remove it from the"
        " projector's columns",
        "note: child 'tags' note_tag does not exist in the database: create it, or fix the"
        " projector's table name",
    ]


def test_a_missing_fanout_index_is_refused_naming_its_columns() -> None:
    columns = {
        "note": {"id", "title", "author_id", "revision", "deleted_at"},
        "note_tag": {"note_id", "tag"},
        "author": {"id", "name"},
    }
    schema = FakeTableSchema(
        columns, {"note": [("id",), ("author_id",)], "note_tag": [("note_id", "tag")]}
    )
    (found,) = asyncio.run(setup_check.schema_findings(tagged(), schema))
    assert found == (
        "note: the fan-out from author needs an index on note starting with (author_id, id):"
        " add one (e.g. named note_author_id_fanout)"
    )
    indexed = FakeTableSchema(
        columns,
        {"note": [("id",), ("author_id", "id", "title")], "note_tag": [("note_id", "tag")]},
    )
    assert asyncio.run(setup_check.schema_findings(tagged(), indexed)) == []
    unindexed_child = FakeTableSchema(
        columns, {"note": [("author_id", "id")], "note_tag": [("tag", "note_id")]}
    )
    assert asyncio.run(setup_check.schema_findings(tagged(), unindexed_child)) == [
        "note: child 'tags' is read by note_id, but no index of note_tag starts with it: add one"
        " (every batch would scan the table)"
    ]


# -- the search engine -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "module"),
    [
        (
            "mapper_parsing_exception: Failed to parse mapping: The mapper type [scaled_float]"
            " declared on field [price] does not exist. It might have been created within a"
            " future version or requires a plugin to be installed.",
            "mapper-extras",
        ),
        (
            "mapper_parsing_exception: No handler for type [token_count] declared on field [n]",
            "mapper-extras",
        ),
        ("illegal_argument_exception: Unknown tokenizer type [ngram] for [t]", "analysis-common"),
        ("illegal_argument_exception: Unknown filter type [synonym] for [s]", "analysis-common"),
        ("analyzer [english] has not been configured in mappings", "analysis-common"),
        ("script_lang not supported [painless]", "lang-painless"),
    ],
)
def test_engine_errors_name_the_module_the_mapping_needs(text: str, module: str) -> None:
    line = missing_module(text)
    assert line is not None and f"lacks the module {module} " in line
    assert "\n" not in line and "install it on the cluster" in line


def test_an_unrelated_engine_error_names_no_module() -> None:
    assert missing_module("index_already_exists_exception: x") is None


class RefusingAdmin:
    def __init__(self, error: Exception | None) -> None:
        self.error = error
        self.created: list[str] = []
        self.deleted: list[str] = []

    async def create_index(self, name: str, body: Any, **_: Any) -> None:
        if self.error is not None:
            raise self.error
        self.created.append(name)

    async def delete_index(self, name: str) -> None:
        self.deleted.append(name)


def test_the_mapping_is_tried_in_a_throwaway_index_that_is_deleted_again() -> None:
    admin = RefusingAdmin(None)
    assert asyncio.run(setup_check.engine_findings(note(), admin, "shop")) == []  # type: ignore[arg-type]
    assert admin.created == admin.deleted and admin.created[0].startswith("shop__check_note_")
    scaled = IndexAdminError(
        "x",
        "mapper_parsing_exception: The mapper type [scaled_float]"
        " declared on field [price] does not exist.",
    )
    found = asyncio.run(setup_check.engine_findings(note(), RefusingAdmin(scaled), "shop"))  # type: ignore[arg-type]
    assert len(found) == 1 and found[0].startswith("note: the search engine lacks the module")
