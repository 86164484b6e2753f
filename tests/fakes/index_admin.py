"""The indices and aliases of the `SearchEngine` fake (`tests.fakes.search_index.InMemoryIndex`
has them).

Each check is the one a real node makes, and a refused operation changes nothing: aliases have at
most one write index each; a swap is all or nothing; deleting an index removes the aliases on it;
document counts are exact at once (a real node's need a refresh).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from searchsync.errors import AliasConflict, IndexAdminError, IndexExists, IndexMissing
from searchsync.naming import check_index_name, physical_version, read_alias_name
from searchsync.search.port import LIVE_FILTER, IndexInfo, WriteIndex, effective_write_index

from tests.fakes.search_state import IndexState

__all__ = ["IndexAdminFake"]


class IndexAdminFake(IndexState):
    async def exists(self, name: str) -> bool:
        return self.has(check_index_name(name))

    async def create_index(
        self,
        name: str,
        body: Mapping[str, Any],
        *,
        meta: Mapping[str, Any] | None = None,
        alias: str | None = None,
    ) -> None:
        check_index_name(name)
        if name in self.indices:
            raise IndexExists(name, "already exists", "resource_already_exists_exception")
        if name in self.aliases:
            raise IndexExists(name, "already exists as alias", "invalid_index_name_exception")
        if alias is not None:
            self._check_can_write_to(check_index_name(alias), name)
        self.add_index(name, body, meta or {})
        if alias is not None:
            self._point(alias, name)

    async def put_alias(self, alias: str, index: str) -> None:
        check_index_name(alias)
        if check_index_name(index) not in self.indices:
            raise IndexMissing(index, "no such index", "index_not_found_exception")
        self._check_can_write_to(alias, index)
        self._point(alias, index)

    async def swap_alias(self, alias: str, *, old: str, new: str) -> None:
        check_index_name(alias)
        for name in (old, new):
            if check_index_name(name) not in self.indices:
                raise IndexMissing(name, "no such index", "index_not_found_exception")
        flags = self.aliases.get(alias, {})
        if old not in flags:
            raise AliasConflict(alias, f"not on {old}", "aliases_not_found_exception")
        others = {index: flag for index, flag in flags.items() if index not in (old, new)}
        if any(flag is True for flag in others.values()):
            raise AliasConflict(alias, "more than one write index", "illegal_state_exception")
        self.aliases[alias] = {**others, new: True}
        read = read_alias_name(alias)
        targets = self.aliases.get(read, {})
        targets.pop(old, None)
        self.aliases[read] = {**targets, new: False}
        self.alias_filters[read] = LIVE_FILTER

    async def list_indices(self, alias: str) -> list[IndexInfo]:
        check_index_name(alias)
        flags = self.aliases.get(alias, {})
        reads = self.aliases.get(read_alias_name(alias), {})
        writer = effective_write_index(flags)
        infos = []
        for name, index in self.indices.items():
            version = physical_version(alias, name)
            if version is None and name not in flags:
                continue
            infos.append(
                IndexInfo(
                    name=name,
                    version=version,
                    docs=len(index.docs),
                    created_at=index.created_at,
                    aliased=name in flags,
                    is_write_index=name == writer,
                    replicas=index.replicas,
                    refresh_interval=index.refresh_interval,
                    meta=dict(index.meta),
                    read_aliased=name in reads,
                )
            )
        return sorted(infos, key=lambda i: (i.version is None, i.version or 0, i.name))

    async def write_index(self, alias: str) -> WriteIndex | None:
        writer = effective_write_index(self.aliases.get(check_index_name(alias), {}))
        if writer is None:
            return None
        return WriteIndex(alias, writer, dict(self.indices[writer].meta))

    async def delete_index(self, name: str) -> None:
        check_index_name(name)
        if name in self.aliases:
            raise IndexAdminError(name, "matches an alias", "illegal_argument_exception")
        if name not in self.indices:
            raise IndexMissing(name, "no such index", "index_not_found_exception")
        del self.indices[name]
        for alias, flags in list(self.aliases.items()):
            flags.pop(name, None)
            if not flags:
                del self.aliases[alias]
                self.alias_filters.pop(alias, None)

    async def update_settings(
        self, name: str, *, refresh_interval: str | None = None, replicas: int | None = None
    ) -> None:
        check_index_name(name)
        targets = list(self.aliases.get(name, {})) or [name]
        if targets[0] not in self.indices:
            raise IndexMissing(name, "no such index", "index_not_found_exception")
        for target in targets:
            index = self.indices[target]
            if refresh_interval is not None:
                index.refresh_interval = refresh_interval
            if replicas is not None:
                index.replicas = replicas

    def _point(self, alias: str, index: str) -> None:
        """`alias` (write) and its read alias (filtered, read only) on `index`."""
        self.aliases.setdefault(alias, {})[index] = True
        read = read_alias_name(alias)
        self.aliases.setdefault(read, {})[index] = False
        self.alias_filters[read] = LIVE_FILTER

    def _check_can_write_to(self, alias: str, index: str) -> None:
        """Refuse what a real node refuses when `index` becomes `alias`'s write index."""
        for name in (alias, read_alias_name(alias)):
            if name in self.indices:
                raise IndexExists(name, "an index has this name", "invalid_alias_name_exception")
        flags = self.aliases.get(alias, {})
        if any(flag is True and other != index for other, flag in flags.items()):
            raise AliasConflict(alias, "more than one write index", "illegal_state_exception")
