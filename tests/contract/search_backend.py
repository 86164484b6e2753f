"""What the search contract cases need from a backend, and the documents they write.

The documents are the contract's own (a small strict mapping), not a projector's: the cases
test the ports, so they must not change when a projection's layout does.
"""

from __future__ import annotations

import itertools
from typing import Any, Protocol

import orjson
from searchsync import naming
from searchsync.search.port import SCHEMA_VERSION_META, IndexAdmin, SearchEngine
from searchsync.search.sink import IndexOp, Sink, WriteOutcome

from tests.fakes.search_index import InMemoryIndex

SCHEMA_VERSION = 1

MAPPING: dict[str, Any] = {
    "settings": {"number_of_shards": 1, "number_of_replicas": 0},
    "mappings": {
        "dynamic": "strict",
        "properties": {
            "id": {"type": "keyword"},
            "title": {"type": "text"},
            "content": {"type": "text"},
            "source_revision": {"type": "long"},
            "projection_schema_version": {"type": "integer"},
            "projection_hash": {"type": "keyword"},
            "is_deleted": {"type": "boolean"},
        },
    },
}


class Backend(Protocol):
    """A search engine under test: the two ports plus a way to look at stored documents."""

    index: SearchEngine
    admin: IndexAdmin

    def fresh_alias(self) -> str:
        """A valid alias name no other case uses; nothing exists under it yet."""
        ...

    async def stored(self, alias: str, doc_id: str) -> tuple[int, dict[str, Any]] | None:
        """The stored (version, source) of a document, or None."""
        ...


def body(
    doc_id: str, revision: int, *, title: str = "齐夏人物分析", deleted: bool = False
) -> dict[str, Any]:
    """A document of the contract mapping (a tombstone when `deleted`: no title or content)."""
    doc: dict[str, Any] = {
        "id": doc_id,
        "source_revision": revision,
        "projection_schema_version": SCHEMA_VERSION,
        "projection_hash": f"hash-{doc_id}-{revision}",
        "is_deleted": deleted,
    }
    if not deleted:
        doc |= {"title": title, "content": f"第{revision}版"}
    return doc


def op(alias: str, doc_id: str, revision: int, **kwargs: Any) -> IndexOp:
    return IndexOp(alias, doc_id, revision, orjson.dumps(body(doc_id, revision, **kwargs)))


async def write(backend: Backend, *ops: IndexOp) -> list[WriteOutcome]:
    return await Sink(backend.index).write(list(ops))


def physical(alias: str, version: int = 1) -> str:
    return naming.physical_name(alias, version)


async def new_alias(backend: Backend, *, schema_version: int = SCHEMA_VERSION) -> str:
    """A fresh alias over a fresh ``<alias>_v1`` with the contract mapping."""
    alias = backend.fresh_alias()
    meta = {SCHEMA_VERSION_META: schema_version}
    await backend.admin.create_index(physical(alias), MAPPING, meta=meta, alias=alias)
    return alias


class Names:
    """Unique alias names under one prefix: ``<prefix>_c<N>``."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._count = itertools.count(1)

    def __call__(self) -> str:
        return naming.check_index_name(f"{self.prefix}_c{next(self._count)}")


class FakeBackend:
    """The in-memory backend: `InMemoryIndex`, its `admin`, and its read fakes."""

    def __init__(self) -> None:
        self.fake = InMemoryIndex()
        self.index: SearchEngine = self.fake
        self.admin: IndexAdmin = self.fake.admin
        self.fresh_alias = Names("contract")

    async def stored(self, alias: str, doc_id: str) -> tuple[int, dict[str, Any]] | None:
        doc = self.fake.get(alias, doc_id)
        return None if doc is None else (doc.version, doc.body)
