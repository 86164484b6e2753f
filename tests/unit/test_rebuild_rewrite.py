"""The REBUILD same-revision rewrite (docs/design.md, invariant 12), over the in-memory index.

Only a REBUILD whose stored document differs from the fresh projection at the same revision is
written again, with ``external_gte``; everything else keeps ``external`` and its 409 stays
"already applied". A concurrent newer write always wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pipeline_fakes import PageTruth, page_row
from searchsync.projection import Projector, default_registry
from searchsync.search.port import StoredDocument
from searchsync.search.sink import (
    EXTERNAL,
    EXTERNAL_GTE,
    IndexOp,
    OutcomeKind,
    Sink,
)
from searchsync.stream.fence import SchemaFence
from searchsync.stream.processor import Processor
from searchsync.stream.work import Work
from searchsync.types import Key, Operation, RawMessage, ThinEvent

from tests.fakes.search_index import InMemoryIndex
from tests.fakes.search_state import StoredDoc

ALIAS = "wiki_page"


def work(aggregate_id: str, revision: int, operation: Operation) -> Work:
    event = ThinEvent(f"{aggregate_id}-{revision}", "wiki_page", aggregate_id, operation, revision)
    return Work(Key("wiki_page", aggregate_id), (event,), (RawMessage("t", 0, 1),), attempts=1)


class RecordingIndex(InMemoryIndex):
    """Records every op's version type; `after_read` runs after each stored-projection read."""

    def __init__(self) -> None:
        super().__init__()
        self.version_types: list[str] = []
        self.after_read: Any = None

    async def bulk_index(self, ops: Sequence[IndexOp]) -> Any:
        self.version_types.extend(op.version_type for op in ops)
        return await super().bulk_index(ops)

    async def get_documents(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredDocument | None]:
        found = await super().get_documents(alias, ids)
        if self.after_read is not None:
            await self.after_read()
        return found


class Env:
    def __init__(self) -> None:
        self.registry = default_registry()
        self.projector: Projector = self.registry.get("wiki_page")
        self.truth = PageTruth()
        self.index = RecordingIndex()
        self.index.given_index("wiki_page_v1", self.projector.mapping)
        self.index.given_alias(ALIAS, "wiki_page_v1")
        self.processor = Processor(
            registry=self.registry,
            truth=self.truth,
            sink=Sink(self.index),
            alias_for=lambda t: t,
            fence=SchemaFence(self.index.admin, interval_s=60.0),
        )

    def store(self, doc_id: str, version: int, body: dict[str, Any]) -> None:
        """Put a document straight into the physical index (a write behind searchsync's back)."""
        self.index.indices["wiki_page_v1"].docs[doc_id] = StoredDoc(version, body)

    def stored(self, doc_id: str) -> StoredDoc:
        doc = self.index.get(ALIAS, doc_id)
        assert doc is not None
        return doc


@pytest.fixture
def env() -> Env:
    return Env()


async def test_a_rebuild_rewrites_a_document_edited_in_place_at_its_revision(env: Env) -> None:
    row = page_row("p1", 3)
    env.truth.put_page(row)
    fresh = env.projector.project(row)
    env.store("p1", 3, {**fresh.body, "title": "edited in Elasticsearch"})  # the hash is unchanged
    [verdict] = await env.processor.process([work("p1", 3, Operation.REBUILD)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert (env.stored("p1").version, env.stored("p1").body) == (3, fresh.body)
    assert env.index.version_types == [EXTERNAL, EXTERNAL_GTE]


async def test_a_rebuild_rewrites_a_document_of_an_older_schema(env: Env) -> None:
    row = page_row("p1", 3)
    env.truth.put_page(row)
    fresh = env.projector.project(row)
    old = {**fresh.body, "projection_schema_version": 1, "projection_hash": "0" * 64}
    env.store("p1", 3, old)
    [verdict] = await env.processor.process([work("p1", 3, Operation.REBUILD)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert env.stored("p1").body == fresh.body


async def test_a_rebuild_adds_a_missing_sync_hash(env: Env) -> None:
    row = page_row("p1", 3)
    env.truth.put_page(row)
    fresh = env.projector.project(row)
    env.store("p1", 3, {k: v for k, v in fresh.body.items() if k != "sync_hash"})
    [verdict] = await env.processor.process([work("p1", 3, Operation.REBUILD)])
    assert verdict.kind is OutcomeKind.APPLIED
    assert env.stored("p1").body == fresh.body


async def test_a_rebuild_of_an_identical_document_is_already_applied(env: Env) -> None:
    env.truth.put_page(page_row("p1", 3))
    await env.processor.process([work("p1", 3, Operation.UPSERT)])
    [verdict] = await env.processor.process([work("p1", 3, Operation.REBUILD)])
    assert verdict.kind is OutcomeKind.ALREADY_APPLIED
    assert env.index.version_types == [EXTERNAL, EXTERNAL]  # no gte write


@pytest.mark.parametrize("operation", [Operation.UPSERT, Operation.TOMBSTONE])
async def test_other_operations_never_rewrite_a_drifted_document(
    env: Env, operation: Operation
) -> None:
    row = page_row("p1", 3)
    env.truth.put_page(row)
    edited = {**env.projector.project(row).body, "title": "edited"}
    env.store("p1", 3, edited)
    [verdict] = await env.processor.process([work("p1", 3, operation)])
    assert verdict.kind is OutcomeKind.ALREADY_APPLIED
    assert env.stored("p1").body == edited
    assert env.index.version_types == [EXTERNAL]


async def test_a_rewrite_racing_a_newer_update_leaves_the_newer_document(env: Env) -> None:
    """The newer write lands between the stored read and the gte write: gte at 3 is refused."""
    row3 = page_row("p1", 3)
    env.truth.put_page(row3)
    env.store("p1", 3, {**env.projector.project(row3).body, "title": "edited"})
    row4 = page_row("p1", 4, title="newer")
    newer = env.projector.project(row4)

    async def newer_update() -> None:
        env.index.after_read = None
        env.truth.put_page(row4)
        [result] = await env.index.bulk_index([IndexOp.from_document(ALIAS, newer)])
        assert result.status == 200

    env.index.after_read = newer_update
    [verdict] = await env.processor.process([work("p1", 3, Operation.REBUILD)])
    assert verdict.finished
    assert (env.stored("p1").version, env.stored("p1").body) == (4, newer.body)
    assert EXTERNAL_GTE in env.index.version_types  # the rewrite was tried, and lost


@given(stored=st.integers(1, 50), ours=st.integers(1, 50), gte=st.booleans())
def test_the_fake_honours_external_and_external_gte(stored: int, ours: int, gte: bool) -> None:
    import asyncio

    index = InMemoryIndex()
    index.given_index("x_v1")
    index.given_alias("x", "x_v1")
    index.indices["x_v1"].docs["a"] = StoredDoc(stored, {"v": stored})
    op = IndexOp("x", "a", ours, b'{"v": 0}', EXTERNAL_GTE if gte else EXTERNAL)
    [result] = asyncio.run(index.bulk_index([op]))
    accepted = ours >= stored if gte else ours > stored
    assert (result.status == 200) is accepted
    assert index.indices["x_v1"].docs["a"].version == (ours if accepted else stored)
