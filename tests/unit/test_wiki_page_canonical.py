"""The wiki_page projector's `canonical_fields` promise (searchsync/projection/_registry.py):
`build` returns its fields in canonical form already, so `Projector.project` may skip the
normalizing walk. Checked over arbitrary rows, strings that are not NFC included."""

from __future__ import annotations

import dataclasses
import json
import unicodedata
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import PoisonMessage
from searchsync.projection import wiki_page

from tests.unit.canonical_promise import assert_walk_skippable, canonical_build

# Decomposed and composed forms, a leading combining mark, CJK, ASCII and the separator.
_PIECES = ["e\u0301", "é", "\u0301", "\u212b", "Å", "齐", "a", "Z", "0", "_", ":", " "]
pieces = st.lists(st.sampled_from(_PIECES), max_size=6).map("".join)
text = pieces | st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
entity = st.fixed_dictionaries(
    {"entity_id": pieces, "entity_type": pieces}, optional={"title": text}
)
relation_type = st.sampled_from(["RELATED_CHARACTER", "R", "a-9"])
rows = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["page_1", "页面", "x"]),
        "title": text,
        "content": text,
        "relations_json": st.dictionaries(relation_type, st.lists(entity, max_size=4), max_size=3),
        "revision": st.integers(1, 2**63 - 1),
        "deleted_at": st.none() | st.just(datetime(2026, 7, 19, 10, 0, 0, 123456)),
    }
).map(lambda row: {**row, "relations_json": json.dumps(row["relations_json"])})

PROMISED = wiki_page.projector()
WALKED = dataclasses.replace(PROMISED, canonical_fields=False)


def test_wiki_page_makes_the_promise() -> None:
    assert PROMISED.canonical_fields is True
    assert WALKED.canonical_fields is False


@given(rows)
def test_build_returns_fields_that_normalizing_leaves_unchanged(row: dict[str, Any]) -> None:
    fields = canonical_build(wiki_page.build, row)
    assert not any(isinstance(v, float) for v in _leaves(fields))


@given(rows)
def test_skipping_the_walk_gives_the_same_document(row: dict[str, Any]) -> None:
    assert_walk_skippable(PROMISED, WALKED, row)


@given(rows)
def test_each_target_is_the_nfc_of_type_colon_id(row: dict[str, Any]) -> None:
    entities = json.loads(row["relations_json"])
    try:
        fields = wiki_page.build(row)
    except PoisonMessage:
        bad = [
            e
            for es in entities.values()
            for e in es
            if not e["entity_type"]
            or not e["entity_id"]
            or ":" in unicodedata.normalize("NFC", e["entity_type"])
        ]
        assert bad, "refused a row whose every entity is well formed"
        return
    for kind, items in entities.items():
        want = sorted(
            {unicodedata.normalize("NFC", f"{e['entity_type']}:{e['entity_id']}") for e in items}
        )
        assert fields["relations"][kind] == want


@pytest.mark.parametrize(
    ("relations", "where"),
    [
        (
            {"R": [{"entity_id": "b", "entity_type": "a"}, 7]},
            "relations_json.R[1] must be an object",
        ),
        ({"R": [{"entity_id": "b"}]}, "relations_json.R[0].entity_type must be a non-empty"),
        ({"R": [{"entity_type": "a", "entity_id": ""}]}, "relations_json.R[0].entity_id must be"),
        ({"R": [{"entity_type": "a:", "entity_id": "b"}]}, "R[0].entity_type must not contain"),
        ({"R": [{"entity_type": "e\u0301:", "entity_id": "b"}]}, "R[0].entity_type must not"),
    ],
)
def test_a_bad_entity_is_named_by_its_position(relations: dict[str, Any], where: str) -> None:
    row = {"id": "p", "title": "t", "content": "c", "revision": 1, "deleted_at": None}
    with pytest.raises(PoisonMessage) as info:
        PROMISED.project({**row, "relations_json": json.dumps(relations)})
    assert where in info.value.message


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]
