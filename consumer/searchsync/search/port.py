"""The narrow ports to the search engine, and the values they speak.

- `SearchIndex` (documents: bulk writes with external versions, stored versions, refresh). It
  and its values `IndexOp` / `ItemResult` are defined next to the sink that drives them
  (`searchsync.search.sink`) and re-exported here.
- `IndexAdmin` (indices and aliases: what ``index init`` and a rebuild need). Implemented by
  `searchsync.search.elasticsearch.EsIndexAdmin` on a real cluster.

Index and alias names follow `searchsync.naming`. Every write alias ``A`` that `IndexAdmin` points
somewhere takes its read alias (``naming.read_alias_name(A)``, filtered on `LIVE_FILTER`, never a
write index) with it in the same request: readers query the read alias and never see a tombstone
(docs/design.md, invariant 15). An index's ``_meta`` is the mapping-level
``_meta`` object; searchsync stores ``projection_schema_version`` there, so a rebuild
(docs/design.md, invariant 8) can tell which projection filled an index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Protocol

from searchsync.errors import SearchSyncError
from searchsync.search.sink import IndexOp, ItemResult, SearchIndex

__all__ = [
    "DEFAULT_REFRESH_INTERVAL",
    "LIVE_FILTER",
    "SCHEMA_VERSION_META",
    "AliasConflict",
    "IndexAdmin",
    "IndexAdminError",
    "IndexExists",
    "IndexInfo",
    "IndexMissing",
    "IndexOp",
    "ItemResult",
    "SearchIndex",
    "WriteIndex",
    "effective_write_index",
    "schema_version_of",
]

SCHEMA_VERSION_META: Final = "projection_schema_version"
"""The ``_meta`` key holding the projection schema version an index was built with."""

LIVE_FILTER: Final[Mapping[str, Any]] = {"term": {"is_deleted": False}}
"""The query of a live document (not a tombstone): the read alias's filter."""

DEFAULT_REFRESH_INTERVAL: Final = "1s"
"""What `IndexInfo.refresh_interval` reports for an index that does not set one."""


class IndexAdminError(SearchSyncError):
    """The cluster refused an index or alias operation; `type` is Elasticsearch's error type."""

    def __init__(self, name: str, message: str, error_type: str | None = None) -> None:
        self.name = name
        self.type = error_type
        super().__init__(f"{name}: {message}")


class IndexExists(IndexAdminError):
    """The name to create is taken (by an index or an alias)."""


class IndexMissing(IndexAdminError):
    """No index (or alias) of that name."""


class AliasConflict(IndexAdminError):
    """An alias operation's precondition does not hold (nothing was changed)."""


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
    """Elasticsearch's rule for an alias's write index, from each index's ``is_write_index``
    flag: the index flagged true; else the only index, unless it is flagged false; else none."""
    marked = [index for index, flag in flags.items() if flag is True]
    if marked:
        return marked[0]
    if len(flags) == 1:
        [(index, flag)] = flags.items()
        return index if flag is None else None
    return None


class IndexAdmin(Protocol):
    """Indices and aliases. Failures raise `IndexAdminError` (refused) or `TransientError`
    (the cluster did not answer); nothing is retried here."""

    async def exists(self, name: str) -> bool:
        """True when `name` is an index or an alias."""
        ...

    async def create_index(
        self,
        name: str,
        body: Mapping[str, Any],
        *,
        meta: Mapping[str, Any] | None = None,
        alias: str | None = None,
    ) -> None:
        """Create `name` from `body` (``settings``, ``mappings``), with `meta` merged over the
        body's ``mappings._meta``; with `alias`, in the same call, as that alias's write index
        (and under its read alias). Raises `IndexExists` when the name is taken."""
        ...

    async def put_alias(self, alias: str, index: str) -> None:
        """Point `alias` at `index` as its write index (other indices it points at stay behind
        it for reads), and its read alias at `index` in the same call. Raises `IndexMissing`
        without the index, `IndexExists` when `alias` is an index's name, `AliasConflict` when
        another index is the alias's write index (that is what `swap_alias` is for)."""
        ...

    async def swap_alias(self, alias: str, *, old: str, new: str) -> None:
        """In one atomic ``_aliases`` call: remove `alias` and its read alias from `old`, add
        them to `new` (`alias` as write index). Raises `AliasConflict` (and changes nothing)
        when `old` does not hold the alias."""
        ...

    async def list_indices(self, alias: str) -> list[IndexInfo]:
        """Every ``<alias>_v<N>`` index and every index `alias` points at, by N then name."""
        ...

    async def write_index(self, alias: str) -> WriteIndex | None:
        """Where writes through `alias` go; None when `alias` is not an alias or has no
        write index (several indices, none marked)."""
        ...

    async def delete_index(self, name: str) -> None:
        """Delete the physical index `name` (and, with it, the aliases on it). No safety
        checks here: callers decide. Raises `IndexMissing`, or `IndexAdminError` for an alias."""
        ...

    async def update_settings(
        self, name: str, *, refresh_interval: str | None = None, replicas: int | None = None
    ) -> None:
        """Change the given dynamic settings of `name` (None: leave as is)."""
        ...
