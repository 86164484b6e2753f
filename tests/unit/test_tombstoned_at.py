"""The operational field ``tombstoned_at`` (docs/design.md, invariant 6 and "Tombstones and their
purge"): the time a document became a tombstone, outside the projection and its hash."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync.errors import PoisonMessage
from searchsync.examples import article
from searchsync.projection import (
    TOMBSTONED_AT,
    Projector,
    canonical_json,
    format_timestamp,
    projected_fields,
    wiki_page,
)

RELATIONS = (
    '{"RELATED_CHARACTER": [{"entity_id": "character_xxx", "entity_type": "character",'
    ' "title": "齐夏"}]}'
)
LIVE = {
    "id": "page_001",
    "title": "齐夏人物分析",
    "content": "…",
    "relations_json": RELATIONS,
    "revision": 42,
    "deleted_at": None,
}
SOFT = {**LIVE, "revision": 43, "deleted_at": datetime(2026, 11, 30, 12, 0, 0, 123456)}

# Computed with the projector before `tombstoned_at` existed: the operational field must not
# change the hash of any document, live, soft-deleted or hard-deleted.
GOLDEN = {
    "live": "d882e9832c177fbc3b6191ad0aded80fe9a67d34f1930a016d84029e6a42c215",
    "soft": "951610ed2e4d3fd0ce569394d10d3368893e9c36d99972a0636ff369b7619d74",
    "tombstone": "08899cd86172a189e98133b8153f52e83c5678027e14c1666bc05f088f49333f",
}

moments = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2999, 12, 31), timezones=st.none()
)


def projector() -> Projector:
    return wiki_page.projector()


def test_the_same_rows_give_the_same_hashes_as_before_the_field_existed() -> None:
    assert projector().project(LIVE).projection_hash == GOLDEN["live"]
    assert projector().project(SOFT).projection_hash == GOLDEN["soft"]
    assert projector().tombstone("page_001", 44).projection_hash == GOLDEN["tombstone"]


def test_a_live_document_has_no_tombstoned_at() -> None:
    doc = projector().project(LIVE)
    assert TOMBSTONED_AT not in doc.body and doc.body.get("tombstoned_at") is None
    assert doc.projected == {k: v for k, v in doc.body.items() if k != "sync_hash"}
    assert doc.reproducible


def test_a_soft_delete_carries_its_deleted_at_byte_reproducibly() -> None:
    first, second = projector().project(SOFT), projector().project(dict(SOFT))
    assert first.body[TOMBSTONED_AT] == "2026-11-30T12:00:00.123Z"
    assert first.encoded == second.encoded and first.reproducible
    assert b'"tombstoned_at":"2026-11-30T12:00:00.123Z"' in first.encoded
    assert first.matches(second.body)
    assert not first.matches({**second.body, TOMBSTONED_AT: "2026-11-30T12:00:00.124Z"})
    unsigned = {k: v for k, v in first.projected.items() if k != "projection_hash"}
    assert hashlib.sha256(canonical_json(unsigned)).hexdigest() == first.projection_hash


@given(moments, moments)
def test_the_delete_time_never_changes_the_hash(one: datetime, other: datetime) -> None:
    a = projector().project({**SOFT, "deleted_at": one})
    b = projector().project({**SOFT, "deleted_at": other})
    assert a.projection_hash == b.projection_hash == GOLDEN["soft"]
    assert a.projected == b.projected
    assert (a.body[TOMBSTONED_AT] == b.body[TOMBSTONED_AT]) == (
        one.replace(microsecond=one.microsecond // 1000 * 1000)
        == other.replace(microsecond=other.microsecond // 1000 * 1000)
    )


def test_a_restored_row_loses_the_field() -> None:
    restored = projector().project({**SOFT, "revision": 44, "deleted_at": None})
    assert TOMBSTONED_AT not in restored.body


def test_a_hard_delete_tombstone_is_stamped_when_written() -> None:
    before = datetime.now(UTC)
    doc = projector().tombstone("page_001", 44)
    after = datetime.now(UTC)
    assert doc.body.get("tombstoned_at") is not None and not doc.reproducible
    stamped = datetime.fromisoformat(doc.body.get("tombstoned_at"))
    assert before - timedelta(milliseconds=1) <= stamped <= after
    assert doc.projection_hash == GOLDEN["tombstone"]
    at = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    fixed = projector().tombstone("page_001", 44, at=at)
    assert fixed.body.get("tombstoned_at") == "2026-11-30T12:00:00.000Z"
    assert fixed.matches(doc.body) and doc.matches(fixed.body)
    assert not fixed.matches(projected_fields(doc.body))  # the field must be stored
    assert not fixed.matches({**doc.body, "source_revision": 45})


@pytest.mark.parametrize(
    ("at", "text"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, 999999), "2026-01-02T03:04:05.999Z"),
        (
            datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=8))),
            "2026-01-01T19:04:05.000Z",
        ),
        (datetime(999, 1, 1), "0999-01-01T00:00:00.000Z"),
    ],
)
def test_format_timestamp(at: datetime, text: str) -> None:
    assert format_timestamp(at) == text


def test_a_delete_time_that_is_not_a_datetime_is_poison() -> None:
    with pytest.raises(PoisonMessage) as info:
        projector().project({**SOFT, "deleted_at": "2026-11-30"})
    assert info.value.code == "PROJECTION_ERROR" and "deleted_at" in info.value.message


def test_the_delete_time_column_must_be_read() -> None:
    def build(row: Any) -> dict[str, Any]:
        return {"is_deleted": bool(row["gone"])}

    mapping = article.projector().mapping
    fields: dict[str, Any] = {
        "aggregate_type": "flag",
        "schema_version": 1,
        "table": "flag",
        "columns": ("id", "revision", "gone"),
        "build": build,
        "mapping": mapping,
    }
    with pytest.raises(ValueError, match="deleted_at_column"):
        Projector(**fields)
    flagged = Projector(**fields, deleted_at_column=None)
    doc = flagged.project({"id": "f", "revision": 1, "gone": 1})
    assert doc.is_deleted and TOMBSTONED_AT not in doc.body  # never purged: no time known


def test_build_may_not_return_the_field() -> None:
    bad = Projector(
        aggregate_type="bad",
        schema_version=1,
        table="bad",
        columns=("id", "revision", "deleted_at"),
        build=lambda row: {"is_deleted": True, TOMBSTONED_AT: "2026-01-01T00:00:00.000Z"},
        mapping=article.projector().mapping,
    )
    with pytest.raises(PoisonMessage, match="reserved"):
        bad.project({"id": "b", "revision": 1, "deleted_at": None})


def test_every_packaged_mapping_maps_the_field_as_a_date() -> None:
    for p in (wiki_page.projector(), article.projector()):
        assert p.mapping["mappings"]["properties"][TOMBSTONED_AT] == {"type": "date"}
