"""`EsIndexAdmin`, the `IndexAdmin` part of the Elasticsearch adapter (`EsIndex` has it; alone, it
serves `searchsync.search.admin` over a bare client): a refusal becomes an `IndexAdminError`; no
answer, 429 or 5xx a `TransientError`. Nothing is retried."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from elasticsearch import AsyncElasticsearch

from searchsync.naming import check_index_name, physical_version, read_alias_name
from searchsync.search.errors import admin_refusal, engine_call
from searchsync.search.port import (
    DEFAULT_REFRESH_INTERVAL,
    LIVE_FILTER,
    IndexInfo,
    WriteIndex,
    effective_write_index,
)

# Resolve names without failing on the ones that do not exist (an absent alias lists nothing).
_LENIENT: dict[str, Any] = {"ignore_unavailable": True, "allow_no_indices": True}
_READ_ALIAS: dict[str, Any] = {"is_write_index": False, "filter": LIVE_FILTER}  # never written to


class EsIndexAdmin:
    def __init__(self, client: AsyncElasticsearch) -> None:
        self._client = client

    async def exists(self, name: str) -> bool:
        with engine_call(name, admin_refusal):
            return bool(await self._client.indices.exists(index=check_index_name(name)))

    async def create_index(
        self,
        name: str,
        body: Mapping[str, Any],
        *,
        meta: Mapping[str, Any] | None = None,
        alias: str | None = None,
    ) -> None:
        mappings = dict(body.get("mappings", {}))
        mappings["_meta"] = {**mappings.get("_meta", {}), **(meta or {})}
        extra: dict[str, Any] = {}
        if alias is not None:
            extra["aliases"] = {
                check_index_name(alias): {"is_write_index": True},
                read_alias_name(alias): _READ_ALIAS,
            }
        with engine_call(name, admin_refusal):
            await self._client.indices.create(
                index=check_index_name(name),
                settings=dict(body.get("settings", {})),
                mappings=mappings,
                **extra,
            )

    async def put_alias(self, alias: str, index: str) -> None:
        action = {"index": check_index_name(index), "alias": check_index_name(alias)}
        with engine_call(alias, admin_refusal):
            await self._client.indices.update_aliases(
                actions=[{"add": {**action, "is_write_index": True}}, _add_read(alias, index)]
            )

    async def swap_alias(self, alias: str, *, old: str, new: str) -> None:
        check_index_name(alias)
        read = read_alias_name(alias)
        remove = {"index": check_index_name(old), "alias": alias, "must_exist": True}
        add = {"index": check_index_name(new), "alias": alias, "is_write_index": True}
        actions: list[dict[str, Any]] = [{"remove": remove}]
        with engine_call(old, admin_refusal):  # an index from before the read alias has none
            if await self._client.indices.exists_alias(name=read, index=old):
                actions.append({"remove": {"index": old, "alias": read}})
        actions += [{"add": add}, _add_read(alias, new)]
        with engine_call(alias, admin_refusal):
            await self._client.indices.update_aliases(actions=actions)

    async def list_indices(self, alias: str) -> list[IndexInfo]:
        check_index_name(alias)
        with engine_call(alias, admin_refusal):
            found = await self._client.indices.get(index=f"{alias}_v*,{alias}", **_LENIENT)
            body: dict[str, Any] = dict(found.body)
            names = [
                name
                for name, info in body.items()
                if physical_version(alias, name) is not None or alias in info.get("aliases", {})
            ]
            if not names:
                return []
            stats = await self._client.indices.stats(index=",".join(names), metric="docs")
        counts = stats.body.get("indices", {})
        flags = _alias_flags(alias, body)
        writer = effective_write_index(flags)
        infos = [
            _info(alias, name, body[name], counts.get(name, {}), name in flags, name == writer)
            for name in names
        ]
        return sorted(infos, key=lambda i: (i.version is None, i.version or 0, i.name))

    async def write_index(self, alias: str) -> WriteIndex | None:
        with engine_call(alias, admin_refusal):
            found = await self._client.indices.get(index=check_index_name(alias), **_LENIENT)
        body: dict[str, Any] = dict(found.body)
        writer = effective_write_index(_alias_flags(alias, body))
        if writer is None:
            return None
        meta = body[writer].get("mappings", {}).get("_meta", {})
        return WriteIndex(alias, writer, dict(meta))

    async def delete_index(self, name: str) -> None:
        with engine_call(name, admin_refusal):
            await self._client.indices.delete(index=check_index_name(name))

    async def update_settings(
        self, name: str, *, refresh_interval: str | None = None, replicas: int | None = None
    ) -> None:
        asked = {"refresh_interval": refresh_interval, "number_of_replicas": replicas}
        changes = {key: value for key, value in asked.items() if value is not None}
        if not changes:
            return
        with engine_call(name, admin_refusal):
            await self._client.indices.put_settings(
                index=check_index_name(name), settings={"index": changes}
            )


def _add_read(alias: str, index: str) -> dict[str, Any]:
    return {"add": {"index": index, "alias": read_alias_name(alias), **_READ_ALIAS}}


def _alias_flags(alias: str, body: Mapping[str, Any]) -> dict[str, bool | None]:
    """``{index: is_write_index flag}`` for every index `alias` points at."""
    entries = {name: info.get("aliases", {}).get(alias) for name, info in body.items()}
    return {
        name: flag if isinstance(flag := entry.get("is_write_index"), bool) else None
        for name, entry in entries.items()
        if entry is not None
    }


def _info(
    alias: str,
    name: str,
    info: Mapping[str, Any],
    stats: Mapping[str, Any],
    aliased: bool,
    is_write_index: bool,
) -> IndexInfo:
    settings = info.get("settings", {}).get("index", {})
    created_ms = int(settings.get("creation_date", 0))
    return IndexInfo(
        name=name,
        version=physical_version(alias, name),
        docs=int(stats.get("primaries", {}).get("docs", {}).get("count", 0)),
        created_at=datetime.fromtimestamp(created_ms / 1000, UTC),
        aliased=aliased,
        is_write_index=is_write_index,
        replicas=int(settings.get("number_of_replicas", 1)),
        refresh_interval=str(settings.get("refresh_interval", DEFAULT_REFRESH_INTERVAL)),
        meta=dict(info.get("mappings", {}).get("_meta", {})),
        read_aliased=read_alias_name(alias) in info.get("aliases", {}),
    )
