"""The projector registry and the wiki_page projector (DESIGN.md invariant 6)."""

from __future__ import annotations

import json
import random
import unicodedata
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from consumer.errors import PoisonMessage
from consumer.projection import (
    RESERVED_FIELDS,
    Projector,
    ProjectorRegistry,
    Row,
    canonical_json,
    default_registry,
    sha256_hex,
    wiki_page,
)

ROOT = Path(__file__).resolve().parents[2]
DOC_FIELDS = {
    "id",
    "title",
    "content",
    "relations",
    "relation_target_ids",
    "source_revision",
    "projection_schema_version",
    "projection_hash",
    "is_deleted",
}

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
ident = st.text(st.sampled_from("abcxyz_019é"), min_size=1, max_size=8)
relation = st.fixed_dictionaries(
    {"type": ident, "target_id": ident},
    optional={"label": st.none() | text, "extra": st.integers()},
)
rows = st.fixed_dictionaries(
    {
        "id": ident.map(lambda s: unicodedata.normalize("NFC", s)),
        "title": text,
        "content": text,
        "relations_json": st.lists(relation, max_size=5),
        "revision": st.integers(1, 2**63 - 1),
        "deleted_at": st.none() | st.just(datetime(2026, 7, 19, 10, 0, 0, 123456)),
    }
)


def as_db_row(row: dict[str, Any], **json_kwargs: Any) -> dict[str, Any]:
    """The row as aiomysql returns it: relations_json as a JSON string."""
    return {**row, "relations_json": json.dumps(row["relations_json"], **json_kwargs)}


def project(row: Row) -> Any:
    return wiki_page.projector().project(row)


def seed_row(**overrides: Any) -> dict[str, Any]:
    row = {
        "id": "page_001",
        "title": "齐夏人物分析",
        "content": "正文",
        "relations_json": '[{"type": "character", "target_id": "character_xxx", "label": "齐夏"}]',
        "revision": 42,
        "deleted_at": None,
        "updated_at": datetime(2026, 7, 19),
    }
    row.update(overrides)
    return row


# -- the document ------------------------------------------------------------------------------


def test_seed_000_example() -> None:
    doc = project(seed_row())
    assert doc.doc_id == "page_001"
    assert doc.source_revision == 42
    assert doc.is_deleted is False
    assert doc.body["relation_target_ids"] == ["character:character_xxx"]
    assert doc.body["relations"] == [
        {"type": "character", "target_id": "character_xxx", "label": "齐夏"}
    ]
    assert set(doc.body) == DOC_FIELDS
    assert doc.body["projection_schema_version"] == wiki_page.SCHEMA_VERSION


@given(rows)
def test_same_row_gives_identical_bytes_and_hash(row: dict[str, Any]) -> None:
    first, second = project(as_db_row(row)), project(as_db_row(row))
    assert first.to_json() == second.to_json()
    assert first.projection_hash == second.projection_hash
    assert orjson.loads(first.to_json()) == first.body


@given(rows, st.randoms(use_true_random=False))
def test_json_layout_and_relation_order_do_not_change_the_hash(
    row: dict[str, Any], rnd: random.Random
) -> None:
    shuffled = [dict(reversed(list(r.items()))) for r in row["relations_json"]]
    rnd.shuffle(shuffled)
    reordered = {**row, "relations_json": shuffled}
    plain = project(as_db_row(row))
    spaced = project(as_db_row(reordered, indent=3, separators=(" ,  ", " :  ")))
    assert spaced.to_json() == plain.to_json()
    assert spaced.projection_hash == plain.projection_hash


@given(rows)
def test_hash_is_sha256_of_the_document_without_the_hash(row: dict[str, Any]) -> None:
    doc = project(as_db_row(row))
    unsigned = {k: v for k, v in doc.body.items() if k != "projection_hash"}
    assert doc.projection_hash == sha256_hex(canonical_json(unsigned))
    assert doc.body["projection_hash"] == doc.projection_hash
    assert len(doc.projection_hash) == 64
    assert set(doc.projection_hash) <= set("0123456789abcdef")


@given(rows, st.sampled_from(["title", "content", "revision", "deleted_at", "relation"]))
def test_any_change_of_a_projected_field_changes_the_hash(row: dict[str, Any], field: str) -> None:
    changed = dict(row)
    if field in ("title", "content"):
        changed[field] = row[field] + "!"
    elif field == "revision":
        changed["revision"] = row["revision"] % (2**63 - 1) + 1
    elif field == "deleted_at":
        changed["deleted_at"] = None if row["deleted_at"] else datetime(2026, 1, 1)
    else:
        changed["relations_json"] = [*row["relations_json"], {"type": "t", "target_id": "new!"}]
    assert project(as_db_row(changed)).projection_hash != project(as_db_row(row)).projection_hash


@given(rows)
def test_relations_are_sorted_and_target_ids_distinct(row: dict[str, Any]) -> None:
    doc = project(as_db_row(row))
    targets = doc.body["relation_target_ids"]
    assert targets == sorted(set(targets))
    keys = [
        (r["type"], r["target_id"], r["label"] is not None, r["label"] or "")
        for r in doc.body["relations"]
    ]
    assert keys == sorted(set(keys))
    assert all(set(r) == {"type", "target_id", "label"} for r in doc.body["relations"])
    assert set(targets) == {f"{r['type']}:{r['target_id']}" for r in doc.body["relations"]}


def test_strings_are_nfc_normalized() -> None:
    decomposed = seed_row(
        title="Cafe\u0301",
        relations_json='[{"type": "characte\u0301r", "target_id": "x", "label": "e\u0301"}]',
    )
    composed = seed_row(
        title="Caf\u00e9",
        relations_json='[{"type": "charact\u00e9r", "target_id": "x", "label": "\u00e9"}]',
    )
    assert project(decomposed).to_json() == project(composed).to_json()


def test_soft_deleted_row_is_a_full_document_marked_deleted() -> None:
    live, deleted = project(seed_row()), project(seed_row(deleted_at=datetime(2026, 1, 1)))
    assert deleted.is_deleted is True and deleted.body["is_deleted"] is True
    assert deleted.body["title"] == live.body["title"]
    assert deleted.projection_hash != live.projection_hash


def test_missing_label_is_null_and_extra_keys_are_ignored() -> None:
    doc = project(seed_row(relations_json='[{"type": "a", "target_id": "b", "weight": 3}]'))
    assert doc.body["relations"] == [{"type": "a", "target_id": "b", "label": None}]


def test_relations_may_arrive_decoded() -> None:
    decoded = seed_row(
        relations_json=[{"type": "character", "target_id": "character_xxx", "label": "齐夏"}]
    )
    assert project(decoded).to_json() == project(seed_row()).to_json()


@pytest.mark.parametrize(
    "relations_json",
    [
        "not json",
        "{}",
        '{"type": "a", "target_id": "b"}',
        "[1]",
        '[{"target_id": "b"}]',
        '[{"type": "a"}]',
        '[{"type": "", "target_id": "b"}]',
        '[{"type": "a", "target_id": 7}]',
        '[{"type": "a:b", "target_id": "c"}]',
        '[{"type": "a", "target_id": "b", "label": 5}]',
        "[NaN]",
        None,
    ],
)
def test_malformed_relations_are_poison(relations_json: object) -> None:
    with pytest.raises(PoisonMessage) as info:
        project(seed_row(relations_json=relations_json))
    assert info.value.code == "PROJECTION_ERROR"


@pytest.mark.parametrize(
    "overrides",
    [
        {"revision": 0},
        {"revision": 2**63},
        {"revision": "42"},
        {"revision": True},
        {"id": ""},
        {"id": 17},
        {"id": "e\u0301"},
        {"title": None},
        {"content": b"\xff"},
    ],
)
def test_unprojectable_rows_are_poison(overrides: dict[str, Any]) -> None:
    with pytest.raises(PoisonMessage) as info:
        project(seed_row(**overrides))
    assert info.value.code == "PROJECTION_ERROR"


@pytest.mark.parametrize("column", ["title", "content", "relations_json", "deleted_at", "id"])
def test_missing_column_is_poison(column: str) -> None:
    row = seed_row()
    del row[column]
    with pytest.raises(PoisonMessage) as info:
        project(row)
    assert info.value.code == "PROJECTION_ERROR"


# -- tombstones --------------------------------------------------------------------------------


@given(ident.map(lambda s: unicodedata.normalize("NFC", s)), st.integers(1, 2**63 - 1))
def test_tombstone_is_deterministic(aggregate_id: str, revision: int) -> None:
    first = wiki_page.projector().tombstone(aggregate_id, revision)
    second = wiki_page.projector().tombstone(aggregate_id, revision)
    assert first.to_json() == second.to_json()
    assert first.is_deleted is True and first.body["is_deleted"] is True
    assert first.body["source_revision"] == revision == first.source_revision
    assert first.doc_id == aggregate_id == first.body["id"]
    unsigned = {k: v for k, v in first.body.items() if k != "projection_hash"}
    assert first.projection_hash == sha256_hex(canonical_json(unsigned))


def test_tombstone_fields_are_in_the_mapping() -> None:
    doc = wiki_page.projector().tombstone("page_001", 43)
    properties = wiki_page.load_mapping()["mappings"]["properties"]
    assert set(doc.body) <= set(properties)
    assert doc.body["projection_schema_version"] == wiki_page.SCHEMA_VERSION


# -- mapping -----------------------------------------------------------------------------------


def test_packaged_mapping_is_a_copy_of_the_schema_file() -> None:
    schema = (ROOT / "schemas/index/wiki_page.json").read_bytes()
    packaged = (ROOT / "consumer/_resources/wiki_page.mapping.json").read_bytes()
    assert packaged == schema


def test_mapping_covers_exactly_the_document_fields() -> None:
    mapping = wiki_page.load_mapping()
    assert mapping["mappings"]["dynamic"] == "strict"
    assert mapping["settings"]["number_of_replicas"] == 0
    properties = mapping["mappings"]["properties"]
    assert set(properties) == DOC_FIELDS
    assert set(properties["relations"]["properties"]) == {"type", "target_id", "label"}
    assert properties["source_revision"]["type"] == "long"
    assert properties["title"]["fields"]["keyword"]["type"] == "keyword"


# -- registry ----------------------------------------------------------------------------------


def note_projector(**overrides: Any) -> Projector:
    def build_note(row: Row) -> dict[str, Any]:
        return {"text": str(row["text"]), "is_deleted": row["deleted_at"] is not None}

    properties = {name: {"type": "keyword"} for name in [*RESERVED_FIELDS, "text", "is_deleted"]}
    fields: dict[str, Any] = {
        "aggregate_type": "note",
        "schema_version": 1,
        "table": "note",
        "columns": ("id", "text", "revision", "deleted_at"),
        "build": build_note,
        "mapping": {"mappings": {"dynamic": "strict", "properties": properties}},
    }
    fields.update(overrides)
    return Projector(**fields)


def test_default_registry_is_new_each_time() -> None:
    first, second = default_registry(), default_registry()
    assert first is not second
    first.register(note_projector())
    assert first.types() == ("note", "wiki_page")
    assert second.types() == ("wiki_page",)


def test_duplicate_registration_is_an_error() -> None:
    registry = default_registry()
    with pytest.raises(ValueError, match="already registered"):
        registry.register(wiki_page.projector())


def test_unknown_type_is_poison() -> None:
    with pytest.raises(PoisonMessage) as info:
        ProjectorRegistry().get("wiki_page")
    assert info.value.code == "UNKNOWN_AGGREGATE_TYPE"


def test_a_registered_type_projects_through_the_registry() -> None:
    registry = ProjectorRegistry()
    registry.register(note_projector())
    doc = registry.get("note").project(
        {"id": "n1", "text": "hi", "revision": 3, "deleted_at": None}
    )
    assert doc.body == {
        "id": "n1",
        "text": "hi",
        "is_deleted": False,
        "source_revision": 3,
        "projection_schema_version": 1,
        "projection_hash": doc.projection_hash,
    }


def test_build_returning_a_reserved_field_is_poison() -> None:
    bad = note_projector(build=lambda row: {"id": "other", "is_deleted": False})
    with pytest.raises(PoisonMessage, match="reserved"):
        bad.project({"id": "n1", "revision": 1})


def test_build_must_say_is_deleted() -> None:
    bad = note_projector(build=lambda row: {"text": "x"})
    with pytest.raises(PoisonMessage, match="is_deleted"):
        bad.project({"id": "n1", "revision": 1})


@pytest.mark.parametrize(
    "overrides",
    [
        {"aggregate_type": "Note"},
        {"aggregate_type": ""},
        {"schema_version": 0},
        {"table": "note; DROP TABLE note"},
        {"table": "`note`"},
        {"table": ""},
        {"columns": ("id", "text", "deleted_at")},  # no revision
        {"columns": ("text", "revision")},  # no id
        {"columns": ("id", "revision", "id")},
        {"columns": ("id", "revision", "te`xt")},
        {"columns": ("id", "revision", "a b")},
        {"columns": ["id", "revision"]},
        {"columns": ("id", "revision", "x" * 65)},
        {"mapping": {"mappings": {"properties": {"id": {"type": "keyword"}}}}},
    ],
)
def test_invalid_projector_definitions_fail_early(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        note_projector(**overrides)


def test_the_wiki_page_projector_reads_every_column_build_needs() -> None:
    projector = wiki_page.projector()
    assert projector.table == "wiki_page"
    assert set(projector.columns) == {
        "id",
        "title",
        "content",
        "relations_json",
        "revision",
        "deleted_at",  # soft-deleted rows are read too: build() says is_deleted from it
    }
