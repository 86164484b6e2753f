"""The `SearchEngine` fake: an in-memory search engine with Elasticsearch's external-version and
alias semantics, as searchsync relies on them.

- writes go through an alias only (``require_alias=true``): a name that is not an alias,
  including a physical index name, answers 404 ``index_not_found_exception``; an alias with
  several indices and no write index answers 400 ``illegal_argument_exception``;
- ``version_type=external``: a write is accepted only if its version is greater than the
  stored one, otherwise 409 ``version_conflict_engine_exception``; 201 on create, 200 on update;
  ``external_gte`` accepts an equal version too (never a lower one);
- with a ``dynamic: strict`` mapping, a top-level field not in the mapping answers 400
  ``strict_dynamic_mapping_exception``; a body that is not a JSON object answers 400
  ``document_parsing_exception``;
- a write alias comes with its read alias, filtered on ``is_deleted: false``: `search`
  through it applies the filter (the queries it understands: `tests.fakes.search_query`);
  searches see every write at once (a real node's after its next refresh).

`inject_failures` scripts item failures (429, 5xx, 400, status 0 for "no response") for the
next ops, which are then not applied, like a rejected item on a real node. The reads
(`tests.fakes.index_readers`) and the purge's part (`tests.fakes.tombstones`) work on the same
state, and so do its indices and aliases (`tests.fakes.index_admin`); `physical_writer()` is the
same engine with ``require_alias=false``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from searchsync.errors import ErrorCode, TransientError
from searchsync.naming import read_alias_name
from searchsync.search.port import LIVE_FILTER, StoredDocument
from searchsync.search.sink import (
    EXTERNAL_GTE,
    IndexOp,
    ItemResult,
)

from tests.fakes.index_admin import IndexAdminFake
from tests.fakes.index_readers import IndexReads
from tests.fakes.search_query import matches
from tests.fakes.search_state import StoredDoc, utc_now
from tests.fakes.tombstones import TombstoneReads

__all__ = ["InMemoryIndex", "PhysicalWriter"]


@dataclass(slots=True)
class _Failure:
    status: int
    error_type: str | None
    reason: str | None
    remaining: int
    doc_id: str | None


class InMemoryIndex(IndexReads, TombstoneReads, IndexAdminFake):
    """The `SearchEngine` fake; its `admin` is the `IndexAdmin` fake over the same state."""

    def __init__(self, *, clock: Callable[[], datetime] = utc_now) -> None:
        super().__init__(clock=clock)
        self._failures: deque[_Failure] = deque()
        self.bulk_calls: list[int] = []  # ops per bulk_index call, for assertions

    # -- set-up shortcuts for tests (the port is `admin`) ------------------------------------

    @property
    def admin(self) -> InMemoryIndex:
        """This engine (code that only needs its admin part takes it so)."""
        return self

    def given_index(self, name: str, mapping: Mapping[str, Any] | None = None) -> None:
        if name in self.indices or name in self.aliases:
            raise ValueError(f"{name} already exists")
        self.add_index(name, mapping or {}, {})

    def given_alias(self, alias: str, index: str) -> None:
        """Point `alias` at `index` only (replacing its previous targets: an atomic swap)."""
        if index not in self.indices:
            raise ValueError(f"no index {index}")
        if alias in self.indices:
            raise ValueError(f"{alias} is an index")
        self.aliases[alias] = {index: True}
        self.aliases[read_alias_name(alias)] = {index: False}
        self.alias_filters[read_alias_name(alias)] = LIVE_FILTER

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

    # -- SearchEngine ------------------------------------------------------------------------

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        self.bulk_calls.append(len(ops))
        return [self._index_one(op) for op in ops]

    def physical_writer(self) -> PhysicalWriter:
        """This index as ``require_alias=false`` sees it: the rebuild's writer, which may
        address a physical index by name (`searchsync.search.sink.EsIndex`)."""
        return PhysicalWriter(self)

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        targets = list(self.aliases[alias]) if alias in self.aliases else [alias]
        if targets[0] not in self.indices:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no alias {alias}")
        if len(targets) > 1:
            raise TransientError(ErrorCode.ES_400, f"mget {alias}: alias has more than one index")
        docs = self.indices[targets[0]].docs
        return {doc_id: (docs[doc_id].version if doc_id in docs else None) for doc_id in ids}

    async def get_documents(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredDocument | None]:
        targets = list(self.aliases[alias]) if alias in self.aliases else [alias]
        if targets[0] not in self.indices:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no alias {alias}")
        docs = self.indices[targets[0]].docs
        return {
            doc_id: StoredDocument(doc_id, docs[doc_id].version, dict(docs[doc_id].body))
            if doc_id in docs
            else None
            for doc_id in ids
        }

    async def refresh(self, alias: str) -> None:
        if not self.has(alias):
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no index or alias {alias}")

    async def search(
        self, alias: str, query: Mapping[str, Any], *, size: int
    ) -> list[StoredDocument]:
        """The first `size` documents of `alias` (or an index) matching `query` and the alias's
        filter, by id (no scoring here)."""
        targets = list(self.aliases[alias]) if alias in self.aliases else [alias]
        if targets[0] not in self.indices:
            raise TransientError(ErrorCode.ALIAS_MISSING, f"no index or alias {alias}")
        wanted = [query, *([self.alias_filters[alias]] if alias in self.alias_filters else [])]
        hits = [
            StoredDocument(doc_id, doc.version, dict(doc.body))
            for index in targets
            for doc_id, doc in self.indices[index].docs.items()
            if all(matches(q, doc_id, doc.body) for q in wanted)
        ]
        return sorted(hits, key=lambda h: h.doc_id)[:size]

    # -- internals ---------------------------------------------------------------------------

    def _index_one(self, op: IndexOp, *, require_alias: bool = True) -> ItemResult:
        failure = self._take_failure(op)
        if failure is not None:
            return ItemResult(op, failure.status, failure.error_type, failure.reason)
        if not require_alias and op.alias in self.indices:
            return self._store(op, op.alias)
        if op.alias not in self.aliases:
            reason = (
                f"no such index [{op.alias}] and [require_alias] request flag is [true] "
                f"and [{op.alias}] is not an alias"
            )
            return ItemResult(op, 404, "index_not_found_exception", reason)
        index = self.alias_target(op.alias)
        if index is None:
            reason = f"no write index is defined for alias [{op.alias}]"
            return ItemResult(op, 400, "illegal_argument_exception", reason)
        return self._store(op, index)

    def _store(self, op: IndexOp, index: str) -> ItemResult:
        try:
            body = orjson.loads(op.body_json)
        except orjson.JSONDecodeError as exc:
            return ItemResult(op, 400, "document_parsing_exception", str(exc))
        if not isinstance(body, dict):
            return ItemResult(op, 400, "document_parsing_exception", "not a JSON object")
        state = self.indices[index]
        unknown = sorted(set(body) - state.properties) if state.properties is not None else []
        if unknown:
            reason = f"mapping set to strict, dynamic introduction of [{unknown[0]}] not allowed"
            return ItemResult(op, 400, "strict_dynamic_mapping_exception", reason)
        stored = state.docs.get(op.doc_id)
        gte = op.version_type == EXTERNAL_GTE
        if stored is not None and (
            op.version < stored.version or (op.version == stored.version and not gte)
        ):
            reason = (
                f"[{op.doc_id}]: version conflict, current version [{stored.version}] is higher "
                f"or equal to the one provided [{op.version}]"
            )
            return ItemResult(op, 409, "version_conflict_engine_exception", reason)
        state.docs[op.doc_id] = StoredDoc(op.version, body, self.next_seq_no())
        return ItemResult(op, 201 if stored is None else 200)

    def _take_failure(self, op: IndexOp) -> _Failure | None:
        for failure in self._failures:
            if failure.doc_id is None or failure.doc_id == op.doc_id:
                failure.remaining -= 1
                if failure.remaining == 0:
                    self._failures.remove(failure)
                return failure
        return None


class PhysicalWriter:
    """The same `InMemoryIndex` with ``require_alias=false``: only its writes differ."""

    def __init__(self, index: InMemoryIndex) -> None:
        self._index = index

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        self._index.bulk_calls.append(len(ops))
        return [self._index._index_one(op, require_alias=False) for op in ops]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)
