"""The fault suite's independent checker (tests/faults/checker.py) is written from the contract
in docs/design.md, not from the projector. Here the two are held side by side: for any row, the
checker's expected fields and hash are exactly what the projector writes, so the checker's
"divergent = 0" means "equal to the contract"; and the offset accounting finds a gap."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st
from searchsync.projection import default_registry, projected_fields

from tests.faults import checker, evidence

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
entity = st.fixed_dictionaries(
    {
        "entity_id": text.filter(bool),
        "entity_type": text.filter(lambda t: bool(t) and ":" not in t),
    },
    optional={"title": text},
)
relations = st.dictionaries(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_-]{0,12}", fullmatch=True), st.lists(entity, max_size=4)
)


@given(
    text.filter(bool),
    text,
    relations,
    st.integers(1, 2**40),
    st.none() | st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
)
def test_the_checker_expects_what_the_projector_writes(
    title: str, content: str, rels: dict[str, Any], revision: int, deleted_at: datetime | None
) -> None:
    row = {
        "id": "page-1",
        "title": title,
        "content": content,
        "relations_json": orjson.dumps(rels).decode(),
        "revision": revision,
        "deleted_at": deleted_at,
    }
    doc = default_registry().get("wiki_page").project(row)
    want = checker.expected_fields(row)
    assert projected_fields(doc.body) == {**want, "projection_hash": doc.projection_hash}
    assert checker.canonical(want) and doc.projection_hash == _sha(want)
    assert doc.body.get("tombstoned_at") == (checker.iso_ms(deleted_at) if deleted_at else None)


def test_the_checker_expects_the_projectors_tombstone() -> None:
    doc = default_registry().get("wiki_page").tombstone("gone-1", 7)
    want = checker.tombstone_fields("gone-1", 7)
    assert projected_fields(doc.body) == {**want, "projection_hash": doc.projection_hash}
    assert doc.projection_hash == _sha(want)


def _sha(fields: dict[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(checker.canonical(fields)).hexdigest()


def test_every_offset_of_the_range_needs_a_terminal_outcome() -> None:
    out = evidence.Outcomes()
    for offset, result in ((10, "applied"), (11, "retry"), (12, "superseded"), (13, "applied")):
        out.add({"msg": "event outcome", "result": result, "topic": "t", "partition": 0,
                 "offset": offset})  # fmt: skip
    out.add({"msg": "poison message dead-lettered", "topic": "t", "partition": 1, "offset": 5})
    acc = evidence.account("t", {0: 10, 1: 5}, {0: 14, 1: 6}, out)
    assert (acc.consumed, acc.accounted, acc.missing) == (5, 4, ("t/0/11",))  # 11 only retried
    later = evidence.Outcomes()
    later.add({"msg": "event outcome", "result": "already_applied", "topic": "t", "partition": 0,
               "offset": 11})  # fmt: skip
    out.finished[("t", 0)] |= later.finished[("t", 0)]
    assert evidence.account("t", {0: 10, 1: 5}, {0: 14, 1: 6}, out).missing == ()


def test_a_hostile_message_needs_its_code_at_its_position() -> None:
    h = [evidence.Hostile("garbage", 0, 3, "BAD_JSON"), evidence.Hostile("big", 1, 4, "TOO_LARGE")]
    assert evidence.check_dead_letters(h, {(0, 3): {"BAD_JSON"}, (1, 4): {"TOO_LARGE"}}) == []
    problems = evidence.check_dead_letters(h, {(0, 3): {"BAD_FIELD"}})
    assert len(problems) == 2 and "want BAD_JSON" in problems[0]
