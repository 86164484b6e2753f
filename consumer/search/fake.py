"""An in-memory `SearchIndex` with Elasticsearch's external-version and alias semantics.

It exists so the sink's contract tests (and any pipeline test) run without a cluster. The rules
it keeps are the ones the pipeline relies on, checked against the real node by the same
contract tests (tests/integration/test_sink_es.py):

- writes go through an alias only (``require_alias=true``): a name that is not an alias,
  including a physical index name, answers 404 ``index_not_found_exception``;
- ``version_type=external``: a write is accepted only if its version is greater than the
  stored one, otherwise 409 ``version_conflict_engine_exception``; 201 on create, 200 on update;
- with a ``dynamic: strict`` mapping, a top-level field not in the mapping answers 400
  ``strict_dynamic_mapping_exception``; a body that is not a JSON object answers 400
  ``document_parsing_exception``.

`inject_failures` scripts item failures (429, 5xx, 400, status 0 for "no response") for the
next ops, which are then not applied, like a rejected item on a real node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from consumer.errors import ErrorCode, TransientError
from consumer.search.sink import IndexOp, ItemResult

__all__ = ["InMemoryIndex", "StoredDoc"]


@dataclass(frozen=True, slots=True)
class StoredDoc:
    version: int
    body: dict[str, Any]


@dataclass(slots=True)
class _Failure:
    status: int
    error_type: str | None
    reason: str | None
    remaining: int
    doc_id: str | None


class InMemoryIndex:
    """Indices, aliases and documents in dicts. Not thread-safe; one event loop only."""

    def __init__(self) -> None:
        self._indices: dict[str, dict[str, StoredDoc]] = {}
        self._properties: dict[str, frozenset[str] | None] = {}  # None: not strict
        self._aliases: dict[str, str] = {}
        self._failures: deque[_Failure] = deque()
        self.bulk_calls: list[int] = []  # ops per bulk_index call, for assertions

    # -- administration (what index init / a rebuild would do on a real cluster) ------------

    def create_index(self, name: str, mapping: Mapping[str, Any] | None = None) -> None:
        if name in self._indices or name in self._aliases:
            raise ValueError(f"{name} already exists")
        self._indices[name] = {}
        mappings = (mapping or {}).get("mappings", {})
        strict = mappings.get("dynamic") == "strict"
        self._properties[name] = frozenset(mappings.get("properties", {})) if strict else None

    def put_alias(self, alias: str, index: str) -> None:
        """Point `alias` at `index` (replacing its previous target: an atomic swap)."""
        if index not in self._indices:
            raise ValueError(f"no index {index}")
        if alias in self._indices:
            raise ValueError(f"{alias} is an index")
        self._aliases[alias] = index

    def remove_alias(self, alias: str) -> None:
        self._aliases.pop(alias, None)

    def alias_target(self, alias: str) -> str | None:
        return self._aliases.get(alias)

    def exists(self, name: str) -> bool:
        """True when `name` is an index or an alias."""
        return name in self._indices or name in self._aliases

    def get(self, name: str, doc_id: str) -> StoredDoc | None:
        """The stored document under an alias or index name (None when absent)."""
        index = self._aliases.get(name, name)
        return self._indices.get(index, {}).get(doc_id)

    # -- fault injection ---------------------------------------------------------------------

    def inject_failures(
        self,
        status: int,
        error_type: str | None = None,
        reason: str | None = None,
        *,
        times: int = 1,
        doc_id: str | None = None,
    ) -> None:
        """Fail the next `times` ops (only those for `doc_id`, if given) with this answer.

        Rules queue in order; an op takes the first rule that matches it.
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        self._failures.append(_Failure(status, error_type, reason, times, doc_id))

    # -- SearchIndex -------------------------------------------------------------------------

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        self.bulk_calls.append(len(ops))
        return [self._index_one(op) for op in ops]

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        index = self._aliases.get(alias)
        if index is None:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no alias {alias}")
        docs = self._indices[index]
        return {doc_id: (docs[doc_id].version if doc_id in docs else None) for doc_id in ids}

    async def refresh(self, alias: str) -> None:
        if alias not in self._aliases and alias not in self._indices:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no index or alias {alias}")

    # -- internals ---------------------------------------------------------------------------

    def _index_one(self, op: IndexOp) -> ItemResult:
        failure = self._take_failure(op)
        if failure is not None:
            return ItemResult(op, failure.status, failure.error_type, failure.reason)
        index = self._aliases.get(op.alias)
        if index is None:
            reason = (
                f"no such index [{op.alias}] and [require_alias] request flag is [true] "
                f"and [{op.alias}] is not an alias"
            )
            return ItemResult(op, 404, "index_not_found_exception", reason)
        try:
            body = orjson.loads(op.body_json)
        except orjson.JSONDecodeError as exc:
            return ItemResult(op, 400, "document_parsing_exception", str(exc))
        if not isinstance(body, dict):
            return ItemResult(op, 400, "document_parsing_exception", "not a JSON object")
        allowed = self._properties[index]
        unknown = sorted(set(body) - allowed) if allowed is not None else []
        if unknown:
            reason = f"mapping set to strict, dynamic introduction of [{unknown[0]}] not allowed"
            return ItemResult(op, 400, "strict_dynamic_mapping_exception", reason)
        docs = self._indices[index]
        stored = docs.get(op.doc_id)
        if stored is not None and op.version <= stored.version:
            reason = (
                f"[{op.doc_id}]: version conflict, current version [{stored.version}] is higher "
                f"or equal to the one provided [{op.version}]"
            )
            return ItemResult(op, 409, "version_conflict_engine_exception", reason)
        docs[op.doc_id] = StoredDoc(op.version, body)
        return ItemResult(op, 201 if stored is None else 200)

    def _take_failure(self, op: IndexOp) -> _Failure | None:
        for failure in self._failures:
            if failure.doc_id is None or failure.doc_id == op.doc_id:
                failure.remaining -= 1
                if failure.remaining == 0:
                    self._failures.remove(failure)
                return failure
        return None
