"""`searchsync projection show`'s library side (`searchsync.ops.preview`): the document the
consumer would write for one row, or why there is none."""

from __future__ import annotations

import asyncio

from searchsync.ops.preview import preview
from searchsync.projection import wiki_page

from tests.fakes.truth import FakeTruth

PROJECTOR = wiki_page.projector()


def row(page: str, **changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "id": page,
        "title": "T",
        "content": "C",
        "relations_json": "{}",
        "revision": 3,
        "deleted_at": None,
    }
    return {**base, **changes}


def test_a_live_row_gives_the_document_the_consumer_writes() -> None:
    truth = FakeTruth()
    truth.put(row("p1"), table="wiki_page")
    found = asyncio.run(preview(PROJECTOR, truth, "p1"))
    assert (found.ok, found.state, found.source_revision) == (True, "live", 3)
    assert found.body == dict(PROJECTOR.project(row("p1")).body)


def test_a_row_that_cannot_be_projected_says_why() -> None:
    truth = FakeTruth()
    truth.put(row("p1", relations_json="[1]"), table="wiki_page")
    found = asyncio.run(preview(PROJECTOR, truth, "p1"))
    assert (found.ok, found.state, found.body) == (False, "unprojectable", None)
    assert found.reason is not None and found.reason == (
        "PROJECTION_ERROR: relations_json must be a JSON object, got list"
    )


def test_a_hard_deleted_row_gives_its_tombstone_and_a_missing_one_nothing() -> None:
    truth = FakeTruth()
    truth.put_floor("wiki_page", "gone", 7)
    found = asyncio.run(preview(PROJECTOR, truth, "gone"))
    assert (found.state, found.source_revision) == ("hard-deleted", 7)
    assert found.body is not None and found.body["is_deleted"] is True
    missing = asyncio.run(preview(PROJECTOR, truth, "never"))
    assert (missing.ok, missing.state) == (False, "missing")
    assert missing.reason is not None and "nothing would be written" in missing.reason
