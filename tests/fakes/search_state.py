"""The state an in-memory search engine keeps: physical indices, their documents, and aliases.

`tests.fakes.search_index.InMemoryIndex` (the `SearchEngine` fake) is one; it follows
Elasticsearch's rules as searchsync relies on them (see its modules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from searchsync.search.port import DEFAULT_REFRESH_INTERVAL, effective_write_index


@dataclass(frozen=True, slots=True)
class StoredDoc:
    version: int
    body: dict[str, Any]
    seq_no: int = 0  # Elasticsearch's: every write of the index bumps it


@dataclass(slots=True)
class FakeIndexState:
    """One physical index."""

    properties: frozenset[str] | None  # None: the mapping is not strict
    mapped: frozenset[str]  # the mapping's top-level fields
    meta: dict[str, Any]
    created_at: datetime
    replicas: int
    refresh_interval: str = DEFAULT_REFRESH_INTERVAL
    docs: dict[str, StoredDoc] = field(default_factory=dict)


def utc_now() -> datetime:
    return datetime.now(UTC)


class IndexState:
    """Indices, aliases and documents in dicts. Not thread-safe; one event loop only."""

    def __init__(self, *, clock: Callable[[], datetime] = utc_now) -> None:
        self.indices: dict[str, FakeIndexState] = {}
        self.aliases: dict[str, dict[str, bool | None]] = {}  # alias -> {index: is_write_index}
        self.alias_filters: dict[str, Mapping[str, Any]] = {}  # filtered alias -> its filter
        self.clock = clock
        self.seq_no = 0

    def next_seq_no(self) -> int:
        self.seq_no += 1
        return self.seq_no

    def alias_target(self, alias: str) -> str | None:
        """The write index of `alias` (None: no such alias, or no write index)."""
        return effective_write_index(self.aliases.get(alias, {}))

    def has(self, name: str) -> bool:
        """True when `name` is an index or an alias."""
        return name in self.indices or name in self.aliases

    def get(self, name: str, doc_id: str) -> StoredDoc | None:
        """The stored document under an alias (its write index) or index name (None: absent)."""
        index = self.alias_target(name) if name in self.aliases else name
        state = self.indices.get(index or "")
        return None if state is None else state.docs.get(doc_id)

    def add_index(self, name: str, body: Mapping[str, Any], meta: Mapping[str, Any]) -> None:
        """Create `name` from an index body (no checks: callers check)."""
        mappings = body.get("mappings", {})
        strict = mappings.get("dynamic") == "strict"
        settings = _flat_settings(body.get("settings", {}))
        self.indices[name] = FakeIndexState(
            properties=frozenset(mappings.get("properties", {})) if strict else None,
            mapped=frozenset(mappings.get("properties", {})),
            meta={**mappings.get("_meta", {}), **meta},
            created_at=self.clock(),
            replicas=int(settings.get("number_of_replicas", 1)),
            refresh_interval=str(settings.get("refresh_interval", DEFAULT_REFRESH_INTERVAL)),
        )


def _flat_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``{"number_of_replicas": 0}`` from any of the forms Elasticsearch accepts: flat,
    ``{"index": {...}}`` or ``{"index.number_of_replicas": 0}``."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if key == "index" and isinstance(value, Mapping):
            flat.update(_flat_settings(value))
        else:
            flat[key.removeprefix("index.")] = value
    return flat
