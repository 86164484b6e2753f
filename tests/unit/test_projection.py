"""The projector registry and the wiki_page projector (docs/design.md, invariant 6 and
"The wiki_page document")."""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import PoisonMessage
from searchsync.projection import (
    OPERATIONAL_FIELDS,
    RESERVED_FIELDS,
    Projector,
    ProjectorRegistry,
    Row,
    canonical_json,
    default_registry,
    sync_hash,
    wiki_page,
)
from searchsync.projection.mapping import RESERVED_PROPERTIES

ROOT = Path(__file__).resolve().parents[2]
AT = datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)
DOC_FIELDS = {
    "id",
    "title",
    "content",
    "relations",
    "relation_target_ids",
    "source_revision",
    "projection_schema_version",
    "projection_hash",
    "sync_hash",
    "is_deleted",
}

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
ident = st.text(st.sampled_from("abcxyz_019é"), min_size=1, max_size=8)
entity_id = st.text(st.sampled_from("abcxyz_019é:e\u0301"), min_size=1, max_size=8)
relation_type = st.sampled_from(["RELATED_CHARACTER", "RELATED_PLACE", "a", "Z-9"]) | st.from_regex(
    wiki_page.RELATION_TYPE, fullmatch=True
)
entity = st.fixed_dictionaries(
    {"entity_id": entity_id, "entity_type": ident},
    optional={"title": text, "extra": st.integers()},
)
relations_json = st.dictionaries(relation_type, st.lists(entity, max_size=4), max_size=4)
rows = st.fixed_dictionaries(
    {
        "id": ident.map(lambda s: unicodedata.normalize("NFC", s)),
        "title": text,
        "content": text,
        "relations_json": relations_json,
        "revision": st.integers(1, 2**63 - 1),
        "deleted_at": st.none() | st.just(datetime(2026, 7, 19, 10, 0, 0, 123456)),
    }
)

SEED_ROW_RELATIONS = {
    "RELATED_CHARACTER": [
        {"entity_id": "character_xxx", "entity_type": "character", "title": "齐夏"}
    ]
}
SEED_DOCUMENT = {
    "id": "page_001",
    "title": "齐夏人物分析",
    "relations": {"RELATED_CHARACTER": ["character:character_xxx"]},
    "relation_target_ids": ["character:character_xxx"],
    "source_revision": 42,
    "projection_schema_version": 2,
    "is_deleted": False,
}
"""The example row and document of the contract (docs/design.md, "The wiki_page document")."""


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
        "relations_json": json.dumps(SEED_ROW_RELATIONS, ensure_ascii=False),
        "revision": 42,
        "deleted_at": None,
        "updated_at": datetime(2026, 7, 19),
    }
    row.update(overrides)
    return row


def shuffled_with_duplicates(relations: dict[str, Any], rnd: random.Random) -> dict[str, Any]:
    """The same relations written differently: other key orders, other item orders, duplicates
    (a duplicate may carry another display title, which is not projected)."""
    out: dict[str, Any] = {}
    kinds = list(relations)
    rnd.shuffle(kinds)
    for kind in kinds:
        items = [dict(reversed(list(e.items()))) for e in relations[kind]]
        for original in list(items):
            if rnd.random() < 0.5:
                items.append({**original, "title": f"copy {rnd.random()}"})
        rnd.shuffle(items)
        out[kind] = items
    return out


# -- the document ------------------------------------------------------------------------------


def test_the_contracts_example_row_gives_its_example_document() -> None:
    doc = project(seed_row())
    body = dict(doc.body)
    assert body.pop("content") == "正文"
    assert body.pop("projection_hash") == doc.projection_hash
    assert body.pop("sync_hash") == sync_hash("wiki_page", "page_001")
    assert body == SEED_DOCUMENT
    assert (
        doc.projection_hash
        == hashlib.sha256(canonical_json({**SEED_DOCUMENT, "content": "正文"})).hexdigest()
    )
    assert (doc.doc_id, doc.source_revision, doc.is_deleted) == ("page_001", 42, False)
    assert set(doc.body) == DOC_FIELDS
    assert wiki_page.SCHEMA_VERSION == 2


@given(rows)
def test_same_row_gives_identical_bytes_and_hash(row: dict[str, Any]) -> None:
    first, second = project(as_db_row(row)), project(as_db_row(row))
    assert first.encoded == second.encoded
    assert first.projection_hash == second.projection_hash
    assert orjson.loads(first.encoded) == first.body


@given(rows, st.randoms(use_true_random=False))
def test_key_order_item_order_duplicates_and_json_layout_do_not_change_the_document(
    row: dict[str, Any], rnd: random.Random
) -> None:
    rewritten = {**row, "relations_json": shuffled_with_duplicates(row["relations_json"], rnd)}
    plain = project(as_db_row(row))
    spaced = project(as_db_row(rewritten, indent=3, separators=(" ,  ", " :  ")))
    assert spaced.encoded == plain.encoded
    assert spaced.projection_hash == plain.projection_hash


@given(rows)
def test_hash_is_sha256_of_the_document_without_the_hash(row: dict[str, Any]) -> None:
    doc = project(as_db_row(row))
    unsigned = {k: v for k, v in doc.projected.items() if k != "projection_hash"}
    assert doc.projection_hash == hashlib.sha256(canonical_json(unsigned)).hexdigest()
    assert set(doc.body) - set(doc.projected) <= OPERATIONAL_FIELDS
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
        relations = row["relations_json"]
        new = {"entity_id": "new!", "entity_type": "t"}
        changed["relations_json"] = {**relations, "ZZ": [*relations.get("ZZ", []), new]}
    assert project(as_db_row(changed)).projection_hash != project(as_db_row(row)).projection_hash


@given(rows)
def test_relations_keep_their_keys_with_sorted_distinct_targets(row: dict[str, Any]) -> None:
    doc = project(as_db_row(row))
    relations, targets = doc.body["relations"], doc.body["relation_target_ids"]
    assert set(relations) == set(row["relations_json"])
    for kind, entities in row["relations_json"].items():
        want = {
            unicodedata.normalize("NFC", f"{e['entity_type']}:{e['entity_id']}") for e in entities
        }
        assert relations[kind] == sorted(want)
    assert targets == sorted({t for kind in relations for t in relations[kind]})


def test_an_empty_list_keeps_its_key() -> None:
    doc = project(seed_row(relations_json='{"RELATED_PLACE": [], "RELATED_CHARACTER": []}'))
    assert doc.body["relations"] == {"RELATED_CHARACTER": [], "RELATED_PLACE": []}
    assert doc.body["relation_target_ids"] == []
    empty = project(seed_row(relations_json="{}"))
    assert empty.body["relations"] == {} and empty.body["relation_target_ids"] == []
    assert empty.projection_hash != doc.projection_hash


def test_one_target_under_several_types_is_one_target_id() -> None:
    entity = {"entity_id": "x", "entity_type": "character"}
    doc = project(seed_row(relations_json={"MENTIONS": [entity], "RELATED_CHARACTER": [entity]}))
    assert doc.body["relations"] == {
        "MENTIONS": ["character:x"],
        "RELATED_CHARACTER": ["character:x"],
    }
    assert doc.body["relation_target_ids"] == ["character:x"]


def test_strings_are_nfc_normalized() -> None:
    decomposed = seed_row(
        title="Cafe\u0301",
        relations_json='{"R": [{"entity_type": "characte\u0301r", "entity_id": "e\u0301"}]}',
    )
    composed = seed_row(
        title="Caf\u00e9",
        relations_json='{"R": [{"entity_type": "charact\u00e9r", "entity_id": "\u00e9"}]}',
    )
    assert project(decomposed).encoded == project(composed).encoded
    assert project(composed).body["relation_target_ids"] == ["charact\u00e9r:\u00e9"]


def test_soft_deleted_row_is_a_full_document_marked_deleted() -> None:
    live, deleted = project(seed_row()), project(seed_row(deleted_at=datetime(2026, 1, 1)))
    assert deleted.is_deleted is True and deleted.body["is_deleted"] is True
    assert deleted.body["title"] == live.body["title"]
    assert deleted.body["relations"] == live.body["relations"]
    assert deleted.projection_hash != live.projection_hash


def test_entity_title_and_extra_keys_are_not_projected() -> None:
    plain = project(seed_row(relations_json='{"R": [{"entity_id": "b", "entity_type": "a"}]}'))
    extra = project(
        seed_row(
            relations_json='{"R": [{"entity_id": "b", "entity_type": "a", "title": "t", "w": 3}]}'
        )
    )
    assert extra.encoded == plain.encoded
    assert plain.body["relations"] == {"R": ["a:b"]}


def test_relations_may_arrive_decoded() -> None:
    decoded = seed_row(relations_json=SEED_ROW_RELATIONS)
    assert project(decoded).encoded == project(seed_row()).encoded


@pytest.mark.parametrize(
    "relations_json",
    [
        # not a JSON object
        "not json",
        "[]",
        '[{"entity_id": "b", "entity_type": "a"}]',
        "null",
        '"text"',
        "7",
        None,
        '{"R": [{"entity_id": NaN, "entity_type": "a"}]}',
        # a value that is not a list
        '{"R": {}}',
        '{"R": "a:b"}',
        '{"R": null}',
        '{"R": {"entity_id": "b", "entity_type": "a"}}',
        # an item that is not an object
        '{"R": [1]}',
        '{"R": ["a:b"]}',
        '{"R": [null]}',
        '{"R": [[]]}',
        # entity_id / entity_type missing, empty, not a string; entity_type with ':'
        '{"R": [{"entity_type": "a"}]}',
        '{"R": [{"entity_id": "b"}]}',
        '{"R": [{"entity_id": "", "entity_type": "a"}]}',
        '{"R": [{"entity_id": "b", "entity_type": ""}]}',
        '{"R": [{"entity_id": 7, "entity_type": "a"}]}',
        '{"R": [{"entity_id": "b", "entity_type": null}]}',
        '{"R": [{"entity_id": "b", "entity_type": "a:z"}]}',
        '{"R": [{"entity_id": "b", "entity_type": "a"}, {"entity_id": "c"}]}',
        # relation types that are not a safe field name under `relations`
        '{"": []}',
        '{"a.b": []}',
        '{"_source": []}',
        '{"a b": []}',
        '{" a": []}',
        '{"-a": []}',
        '{"é": []}',
        '{"a*": []}',
        json.dumps({"A" * 129: []}),
        {1: []},
    ],
)
def test_malformed_relations_are_poison(relations_json: object) -> None:
    with pytest.raises(PoisonMessage) as info:
        project(seed_row(relations_json=relations_json))
    assert info.value.code == "PROJECTION_ERROR"


@given(st.text(max_size=10).filter(lambda s: not wiki_page.RELATION_TYPE.fullmatch(s)))
def test_any_relation_type_outside_the_pattern_is_poison(kind: str) -> None:
    with pytest.raises(PoisonMessage) as info:
        project(seed_row(relations_json={kind: []}))
    assert info.value.code == "PROJECTION_ERROR"


def test_the_longest_relation_type_is_accepted() -> None:
    kind = "A" * 128
    assert project(seed_row(relations_json={kind: []})).body["relations"] == {kind: []}


@pytest.mark.parametrize(
    "overrides",
    [
        {"revision": 0},
        {"revision": 2**63},
        {"revision": "42"},
        {"revision": True},
        {"id": ""},
        {"id": True},
        {"id": 17.0},
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
    first = wiki_page.projector().tombstone(aggregate_id, revision, at=AT)
    second = wiki_page.projector().tombstone(aggregate_id, revision, at=AT)
    later = wiki_page.projector().tombstone(aggregate_id, revision)  # at: now
    assert first.encoded == second.encoded
    # the time is operational: another time, the same projected fields and hash
    assert later.projected == first.projected and later.projection_hash == first.projection_hash
    assert later.matches(first.body) and first.matches(later.body)
    assert first.reproducible is False
    assert first.body.get("tombstoned_at") == "2026-11-30T12:00:00.123Z"
    assert first.is_deleted is True and first.body["is_deleted"] is True
    assert first.body["source_revision"] == revision == first.source_revision
    assert first.doc_id == aggregate_id == first.body["id"]
    unsigned = {k: v for k, v in first.projected.items() if k != "projection_hash"}
    assert first.projection_hash == hashlib.sha256(canonical_json(unsigned)).hexdigest()


def test_tombstone_fields_are_in_the_mapping() -> None:
    doc = wiki_page.projector().tombstone("page_001", 43)
    properties = wiki_page.load_mapping()["mappings"]["properties"]
    assert set(doc.body) <= set(properties)
    assert doc.body["projection_schema_version"] == wiki_page.SCHEMA_VERSION


# -- mapping -----------------------------------------------------------------------------------


def test_packaged_mapping_is_a_copy_of_the_schema_file() -> None:
    schema = (ROOT / "schemas/index/wiki_page.json").read_bytes()
    packaged = (ROOT / "consumer/searchsync/_resources/wiki_page.mapping.json").read_bytes()
    assert packaged == schema
    assert orjson.loads(packaged) == wiki_page.load_mapping()


def test_mapping_covers_exactly_the_document_fields() -> None:
    mapping = wiki_page.load_mapping()
    assert mapping["mappings"]["dynamic"] == "strict"
    assert mapping["settings"]["number_of_replicas"] == 0
    properties = mapping["mappings"]["properties"]
    assert set(properties) == DOC_FIELDS | {"tombstoned_at"}  # the operational field
    assert properties["tombstoned_at"] == {"type": "date"}
    # open-ended relation types: `relations.<type>` become keywords, the root stays strict
    assert properties["relations"] == {"type": "object", "dynamic": True}
    [template] = mapping["mappings"]["dynamic_templates"]
    assert list(template.values()) == [
        {"path_match": "relations.*", "mapping": {"type": "keyword"}}
    ]
    assert properties["relation_target_ids"]["type"] == "keyword"
    assert properties["source_revision"]["type"] == "long"
    assert properties["title"]["fields"]["keyword"]["type"] == "keyword"


# -- registry ----------------------------------------------------------------------------------


def note_projector(**overrides: Any) -> Projector:
    def build_note(row: Row) -> dict[str, Any]:
        return {"text": str(row["text"]), "is_deleted": row["deleted_at"] is not None}

    properties = {"text": {"type": "keyword"}}  # the team's own fields only
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
        "sync_hash": sync_hash("note", "n1"),
    }


def test_build_returning_a_reserved_field_is_poison() -> None:
    bad = note_projector(build=lambda row: {"id": "other", "is_deleted": False})
    with pytest.raises(PoisonMessage, match="reserved"):
        bad.project({"id": "n1", "revision": 1})


def test_build_must_say_is_deleted() -> None:
    bad = note_projector(build=lambda row: {"text": "x"})
    with pytest.raises(PoisonMessage, match="is_deleted"):
        bad.project({"id": "n1", "revision": 1})


def test_searchsync_adds_its_reserved_properties_to_a_mapping_of_the_teams_fields() -> None:
    properties = note_projector().mapping["mappings"]["properties"]
    assert list(properties) == ["text", *RESERVED_PROPERTIES]
    assert {k: v for k, v in properties.items() if k != "text"} == RESERVED_PROPERTIES
    assert set(RESERVED_FIELDS) | {"is_deleted"} == set(RESERVED_PROPERTIES)
    # a mapping may state them too, with the same type (the packaged ones do)
    stated = {"mappings": {"properties": {"id": {"type": "keyword"}, "text": {"type": "text"}}}}
    assert list(note_projector(mapping=stated).mapping["mappings"]["properties"])[:2] == [
        "id",
        "text",
    ]


def test_a_reserved_property_of_another_type_is_refused_naming_the_fix() -> None:
    wrong = {"mappings": {"properties": {"source_revision": {"type": "integer"}}}}
    with pytest.raises(ValueError, match=r"remove it from the mapping .* or make it"):
        note_projector(mapping=wrong)


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
        {"mapping": {"mappings": {"properties": {"sync_hash": {"type": "keyword"}}}}},
        {"mapping": {"mappings": {"properties": {"is_deleted": "boolean"}}}},
        {"mapping": {"mappings": []}},
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


def test_sync_hash_left_every_projection_hash_as_it_was() -> None:
    """The operational sync_hash is outside the hash: documents written before it keep theirs."""
    doc = project(seed_row(content="c"))  # the hash as computed before sync_hash existed
    assert doc.projection_hash == (
        "ba5c2b1131d02f049ae8fa4c6d21d1b3193d19cb04f13957385f8e4abe7677c7"
    )
    tomb = wiki_page.projector().tombstone("page_001", 43)
    assert tomb.projection_hash == (
        "d211ff6236f3ae4e5abcf79fdae56fdc8d5a59fa5adb2a9d61d9c7026f1f4338"
    )
    assert tomb.body["sync_hash"] == zlib.crc32(b"wiki_page:page_001")


@given(st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=30))
def test_sync_hash_is_crc32_of_type_and_id(doc_id: str) -> None:
    value = sync_hash("wiki_page", doc_id)
    assert value == zlib.crc32(("wiki_page:" + doc_id).encode("utf-8"))
    assert 0 <= value < 2**32
