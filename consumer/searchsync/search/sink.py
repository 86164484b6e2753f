"""The write side of the search port (`SearchEngine`): its outcomes and `Sink`. Writes are
``index`` actions at the external version ``source_revision`` through the alias (docs/design.md,
invariants 3, 4, 7); `Sink` never raises for an engine failure and confirms every 409 by reading
the stored version. Hot-path `NamedTuple`s: never compare one with a plain tuple."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple, Protocol

from searchsync.errors import ErrorCode, TransientError
from searchsync.search.errors import BAD_RESPONSE_ERROR, NO_RESPONSE, status_code
from searchsync.search.port import EXTERNAL as EXTERNAL
from searchsync.search.port import EXTERNAL_GTE as EXTERNAL_GTE
from searchsync.search.port import IndexOp as IndexOp
from searchsync.search.port import ItemResult as ItemResult
from searchsync.search.port import SearchEngine, StoredDocument


class OutcomeKind(enum.Enum):
    """What became of an op or work: the one outcome vocabulary (a FAILED code's disposition is in
    the `ErrorCode` table)."""

    APPLIED = "APPLIED"  # written now
    ALREADY_APPLIED = "ALREADY_APPLIED"  # 409 and the stored version equals ours
    AHEAD = "AHEAD"  # 409 and Elasticsearch holds a newer version: re-read the truth
    FAILED = "FAILED"  # not written; `code` says why


FINISHED_KINDS: Final = frozenset({OutcomeKind.APPLIED, OutcomeKind.ALREADY_APPLIED})
"""The kinds that need nothing more: applied now or before."""


class WriteOutcome(NamedTuple):
    op: IndexOp
    kind: OutcomeKind
    code: ErrorCode | None = None
    message: str | None = None
    stored_version: int | None = None

    @classmethod
    def failed(
        cls, op: IndexOp, code: ErrorCode, message: str, stored_version: int | None = None
    ) -> WriteOutcome:
        return cls(op, OutcomeKind.FAILED, code, message, stored_version)


class SinkObserver(Protocol):
    """Optional metrics hooks (`searchsync.observability.metrics`)."""

    def bulk_done(self, actions: int, seconds: float) -> None: ...

    def outcomes(self, outcomes: Sequence[WriteOutcome]) -> None: ...


class Sink:
    """Writes ops and returns one confirmed `WriteOutcome` per op, in order."""

    def __init__(
        self,
        index: SearchEngine,
        *,
        observer: SinkObserver | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._index = index
        self._observer = observer
        self._clock = clock

    async def write(self, ops: Sequence[IndexOp]) -> list[WriteOutcome]:
        if not ops:
            return []
        started = self._clock()
        results = await self._index.bulk_index(ops)
        if len(results) != len(ops):  # a broken adapter must not lose ops
            results = [ItemResult(op, NO_RESPONSE, BAD_RESPONSE_ERROR, "count") for op in ops]
        outcomes: list[WriteOutcome | None] = []
        conflicts: dict[str, list[int]] = {}
        applied = OutcomeKind.APPLIED
        for position, result in enumerate(results):
            if 200 <= result.status < 300:  # written: the common case, before the error table
                op = result.op
                outcomes.append(WriteOutcome(op, applied, None, None, op.version))
                continue
            code = status_code(result.status, result.error_type)
            if code is ErrorCode.ES_409:
                conflicts.setdefault(result.op.alias, []).append(position)
                outcomes.append(None)
            else:
                message = f"{result.status} {result.error_type}: {result.reason}"
                outcomes.append(WriteOutcome.failed(result.op, code, message))
        for alias, positions in conflicts.items():
            await self._confirm(alias, [results[p].op for p in positions], positions, outcomes)
        if self._observer is not None:
            self._observer.bulk_done(len(ops), self._clock() - started)
        final = [o for o in outcomes if o is not None]  # `_confirm` filled every None
        if self._observer is not None:
            self._observer.outcomes(final)
        return final

    async def stored(self, alias: str, ids: Sequence[str]) -> dict[str, StoredDocument | None]:
        """The real-time stored document per id (None: absent)."""
        return await self._index.get_documents(alias, ids)

    async def _confirm(
        self,
        alias: str,
        ops: list[IndexOp],
        positions: list[int],
        outcomes: list[WriteOutcome | None],
    ) -> None:
        try:
            stored = await self._index.get_versions(alias, sorted({op.doc_id for op in ops}))
        except TransientError as exc:
            for op, position in zip(ops, positions, strict=True):
                outcomes[position] = WriteOutcome.failed(op, exc.code, exc.message)
            return
        for op, position in zip(ops, positions, strict=True):
            version = stored.get(op.doc_id)
            if version == op.version:
                outcomes[position] = WriteOutcome(
                    op, OutcomeKind.ALREADY_APPLIED, None, None, version
                )
            elif version is not None and version > op.version:
                message = f"stored version {version} > {op.version}"
                outcomes[position] = WriteOutcome(op, OutcomeKind.AHEAD, None, message, version)
            else:
                message = f"409 but stored version is {version}"
                outcomes[position] = WriteOutcome.failed(
                    op, ErrorCode.ES_409_UNCONFIRMED, message, version
                )
