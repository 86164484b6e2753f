"""The port to the search engine: `SearchEngine` (documents: writes, reads, searches, bucket
pages, tombstones; and `IndexAdmin`, its indices and aliases), and its values. A write alias moves
with its read alias (``naming.read_alias_name``, filtered on `LIVE_FILTER`) in one request
(docs/design.md, invariant 15); an index's ``_meta`` holds ``projection_schema_version``."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, NamedTuple, Protocol

import orjson

from searchsync.projection import Document
from searchsync.search.tombstones import DeleteOutcome, TombstoneHit
from searchsync.types import BucketCursor

SCHEMA_VERSION_META: Final = "projection_schema_version"
"""The ``_meta`` key holding the projection schema version an index was built with."""

LIVE_FILTER: Final[Mapping[str, Any]] = {"term": {"is_deleted": False}}
"""The query of a live document (not a tombstone): the read alias's filter."""

DEFAULT_REFRESH_INTERVAL: Final = "1s"
"""What `IndexInfo.refresh_interval` reports for an index that does not set one."""


EXTERNAL: Final = "external"
EXTERNAL_GTE: Final = "external_gte"
"""Only the REBUILD same-revision rewrite uses it (docs/design.md, invariant 12)."""


class IndexOp(NamedTuple):
    """One ``index`` action: `body_json` under `doc_id` at external `version` through `alias`
    (``external_gte`` only for a REBUILD same-revision rewrite)."""

    alias: str
    doc_id: str
    version: int
    body_json: bytes
    version_type: str = EXTERNAL

    @classmethod
    def from_document(cls, alias: str, document: Document) -> IndexOp:
        return cls(alias, document.doc_id, document.source_revision, document.encoded)

    def action_json(self) -> bytes:
        meta = {
            "_index": self.alias,
            "_id": self.doc_id,
            "version": self.version,
            "version_type": self.version_type,
        }
        return orjson.dumps({"index": meta})


class ItemResult(NamedTuple):
    """What the engine (or transport) said about one op."""

    op: IndexOp
    status: int
    error_type: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A document as the engine stores it: its id, ``_version`` and ``_source``."""

    doc_id: str
    version: int
    source: dict[str, Any]


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """One physical index as `IndexAdmin.list_indices` sees it."""

    name: str
    version: int | None  # N of "<alias>_v<N>"; None for an index the alias points at otherwise
    docs: int  # primary documents, as of the last refresh
    created_at: datetime  # timezone-aware, UTC
    aliased: bool  # the alias points at this index
    is_write_index: bool  # the alias's writes go here
    replicas: int
    refresh_interval: str  # DEFAULT_REFRESH_INTERVAL when the index does not set one
    meta: Mapping[str, Any] = field(default_factory=dict)  # the mapping's _meta
    read_aliased: bool = False  # the alias's read alias (<alias>_live) points at this index

    @property
    def schema_version(self) -> int | None:
        return schema_version_of(self.meta)


@dataclass(frozen=True, slots=True)
class WriteIndex:
    """The index an alias writes to, and that index's ``_meta``."""

    alias: str
    index: str
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def schema_version(self) -> int | None:
        return schema_version_of(self.meta)


def schema_version_of(meta: Mapping[str, Any]) -> int | None:
    """``_meta.projection_schema_version`` when it is an int, else None."""
    value = meta.get(SCHEMA_VERSION_META)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def effective_write_index(flags: Mapping[str, bool | None]) -> str | None:
    """Elasticsearch's write index of an alias, from each index's ``is_write_index`` flag: the one
    flagged true; else the only index unless flagged false; else None."""
    marked = [index for index, flag in flags.items() if flag is True]
    if marked or len(flags) != 1:
        return next(iter(marked), None)
    [(index, flag)] = flags.items()
    return index if flag is None else None


class IndexAdmin(Protocol):
    """Indices and aliases. Raises `IndexAdminError` (refused) or `TransientError` (no answer);
    nothing is retried."""

    async def exists(self, name: str) -> bool: ...

    async def create_index(
        self,
        name: str,
        body: Mapping[str, Any],
        *,
        meta: Mapping[str, Any] | None = None,
        alias: str | None = None,
    ) -> None:
        """Create `name` from `body` with `meta` merged over ``mappings._meta``; with `alias`, in
        the same call, as its write index under its read alias. `IndexExists` when the name is
        taken."""

    async def put_alias(self, alias: str, index: str) -> None:
        """Point `alias` (as write index) and its read alias at `index` in one call. `IndexMissing`
        without the index, `IndexExists` when `alias` names an index, `AliasConflict` when another
        index is the write index."""

    async def swap_alias(self, alias: str, *, old: str, new: str) -> None:
        """Move `alias` and its read alias from `old` to `new` in one atomic ``_aliases`` call;
        `AliasConflict` (nothing changed) when `old` does not hold the alias."""

    async def list_indices(self, alias: str) -> list[IndexInfo]:
        """Every ``<alias>_v<N>`` index and every index `alias` points at, by N then name."""

    async def write_index(self, alias: str) -> WriteIndex | None:
        """Where writes through `alias` go; None when it is no alias or has no write index."""

    async def delete_index(self, name: str) -> None:
        """Delete the physical index `name` with its aliases; no safety checks. `IndexMissing`, or
        `IndexAdminError` for an alias."""

    async def update_settings(
        self, name: str, *, refresh_interval: str | None = None, replicas: int | None = None
    ) -> None: ...


class SearchEngine(IndexAdmin, Protocol):
    """The search engine, with Elasticsearch's external versions: its indices and aliases
    (`IndexAdmin`, all that some code needs) and documents. Writes go through an alias unless the
    adapter was made for a rebuild's physical index; reads name an alias or an index. A failed
    read raises `TransientError` (a refused search `InvalidRequest`)."""

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        """One result per op, in order; never raises for a failed request."""

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        """Real-time stored ``_version`` per id (None: absent)."""

    async def get_documents(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredDocument | None]:
        """The real-time `StoredDocument` per id (None: absent), one mget."""

    async def refresh(self, index: str) -> None:
        """Make writes visible to search (verification and tests only)."""

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]:
        """The first `size` hits of `query`, with versions and sources."""

    async def count(self, index: str) -> int:
        """Documents in `index` (as of the last refresh)."""

    async def deleted_ids(self, index: str) -> list[str]:
        """Ids of every ``is_deleted: true`` document, sorted."""

    async def sample(self, index: str, size: int, seed: int) -> list[StoredDocument]:
        """Up to `size` documents chosen at random (the same for the same seed and data)."""

    async def top_ids(self, index: str, field: str, text: str, k: int) -> list[str]:
        """The ids of the `k` best live documents for ``match: {field: text}`` with every word
        required (``operator: and``), so a title finds its own few documents, not ties."""

    async def other_schema(self, index: str, schema_version: int) -> list[tuple[str, int]]:
        """(id, stored version) of every document whose ``projection_schema_version`` is not
        `schema_version` (missing counts as other), sorted by id."""

    async def bucket_page(
        self, alias: str, lo: int, hi: int, after: BucketCursor | None, limit: int, *, content: bool
    ) -> list[StoredDocument]:
        """Up to `limit` documents with ``lo <= sync_hash < hi`` after `after`, by ``id``; without
        `content`, sources are light: ``id``, ``sync_hash`` and the two flags' fields."""

    def strays(self, alias: str, limit: int) -> AsyncGenerator[list[StoredDocument], None]:
        """Pages of up to `limit` documents without a key-space ``sync_hash``, sources light."""

    async def maps_tombstoned_at(self, index: str) -> bool:
        """Whether the physical `index`'s mapping has ``tombstoned_at`` (a tombstone's age)."""

    def scan_tombstones(
        self, index: str, before: str, page_size: int
    ) -> AsyncIterator[list[TombstoneHit]]:
        """Pages of `index`'s tombstones with ``tombstoned_at < before`` (ISO-8601), as it was."""

    async def delete_tombstones(
        self, index: str, hits: Sequence[TombstoneHit]
    ) -> list[DeleteOutcome]:
        """Delete each hit whose seq_no and primary term still match; one outcome per hit."""
