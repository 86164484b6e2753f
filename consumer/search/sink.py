"""The Elasticsearch port: bulk writes with external versions and a verdict for every item.

Every write is an ``index`` action with ``version=<source_revision>``,
``version_type=external`` through the alias, on a bulk request with ``require_alias=true``
(docs/design.md, invariants 3, 4 and 7); only the rebuild turns that off (`EsIndex`). There is
no delete action: deletes are tombstone documents.

Layers, each with one job:

- `SearchIndex`: the narrow port. `EsIndex` adapts `AsyncElasticsearch` to it;
  `consumer.search.fake.InMemoryIndex` implements it in memory for tests.
- `classify`: a pure function from one bulk item result to its `ErrorCode` (None: written).
  What a code means (poison, transient, systemic) is `consumer.errors`' table, not the sink's.
- `Sink`: runs a bulk, classifies every item, and confirms every 409 by reading the stored
  version (one mget per alias per batch) so that a conflict is never silently ignored.

Nothing here raises for an Elasticsearch failure: a failed request becomes a per-item result,
and the caller decides (retry, DLQ, pause) from each `WriteOutcome`.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

import orjson
from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError, AsyncElasticsearch

from consumer.errors import Disposition, ErrorCode, TransientError
from consumer.projection import Document, content_hash
from consumer.search.errors import es_error

__all__ = [
    "BulkSizer",
    "EsIndex",
    "IndexOp",
    "ItemResult",
    "OutcomeKind",
    "SearchIndex",
    "Sink",
    "SinkObserver",
    "StoredProjection",
    "WriteOutcome",
    "classify",
]

# Status 0 in an `ItemResult` means "no HTTP answer for this item" (connection, timeout, ...).
NO_RESPONSE = 0
TIMEOUT_ERROR = "timeout"
CONNECTION_ERROR = "connection_error"
BAD_RESPONSE_ERROR = "bad_response"

_MAPPING_ERRORS = frozenset(
    {
        "mapper_parsing_exception",
        "document_parsing_exception",
        "strict_dynamic_mapping_exception",
        "illegal_argument_exception",
    }
)


EXTERNAL: Final = "external"
EXTERNAL_GTE: Final = "external_gte"
"""Only the REBUILD same-revision rewrite uses it (docs/design.md, invariant 12)."""


@dataclass(frozen=True, slots=True)
class IndexOp:
    """One ``index`` action: `body_json` under `doc_id` at external `version`, through `alias`.

    `version_type` is ``external`` for every write but one: the processor's REBUILD rewrite of a
    document whose stored hash or schema differs at the same revision (``external_gte``).
    """

    alias: str
    doc_id: str
    version: int
    body_json: bytes
    version_type: str = EXTERNAL

    @classmethod
    def from_document(cls, alias: str, document: Document) -> IndexOp:
        """The op that writes `document` at its `source_revision`."""
        return cls(alias, document.doc_id, document.source_revision, document.to_json())

    def action_json(self) -> bytes:
        """The bulk action line (without newline)."""
        meta = {
            "_index": self.alias,
            "_id": self.doc_id,
            "version": self.version,
            "version_type": self.version_type,
        }
        return orjson.dumps({"index": meta})


@dataclass(frozen=True, slots=True)
class StoredProjection:
    """What a stored document says about its projection (for the REBUILD rewrite decision)."""

    version: int
    projection_hash: str | None
    schema_version: int | None
    sync_hash: int | None
    content_hash: str | None  # the hash the stored `_source` deserves (None: not canonical)


@dataclass(frozen=True, slots=True)
class ItemResult:
    """What Elasticsearch (or the transport) said about one op."""

    op: IndexOp
    status: int
    error_type: str | None = None
    reason: str | None = None


class SearchIndex(Protocol):
    """The narrow port to a search engine with Elasticsearch's external-version semantics."""

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        """Write `ops`; return one result per op, in order. Never raises for a failed request."""
        ...

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        """Real-time stored `_version` per id (None: absent). Raises `TransientError` on failure."""
        ...

    async def refresh(self, alias: str) -> None:
        """Make written documents visible to search (tests and verification only)."""
        ...

    async def get_projections(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredProjection | None]:
        """Real-time stored version, hash, schema version, ``sync_hash`` and the hash of the
        stored content per id (None: absent); one mget. Raises `TransientError` on failure."""
        ...


def classify(result: ItemResult) -> ErrorCode | None:
    """The error code of one item result (None: written; ES_409: a conflict to confirm). Pure."""
    status, etype = result.status, result.error_type
    if 200 <= status < 300:
        return None
    if status == NO_RESPONSE:
        return ErrorCode.ES_TIMEOUT if etype == TIMEOUT_ERROR else ErrorCode.ES_UNAVAILABLE
    return status_code(status, etype)


def status_code(status: int, error_type: str | None) -> ErrorCode:
    """The error code of an HTTP answer that is not a success."""
    if status == 409:
        return ErrorCode.ES_409
    if error_type == "cluster_block_exception":  # 429 flood-stage disk block, 403 write block
        return ErrorCode.ES_BLOCKED
    if status == 429:
        return ErrorCode.ES_429
    if status == 404:  # index_not_found_exception: the alias is missing; run index init
        return ErrorCode.ALIAS_MISSING
    if status in (401, 403):
        return ErrorCode.ES_AUTH
    if status == 408:
        return ErrorCode.ES_TIMEOUT
    if status == 413:  # a single document above http.max_content_length; BulkSizer avoids more
        return ErrorCode.ES_TOO_LARGE
    if status >= 500:
        return ErrorCode.ES_5XX
    if status == 400:
        return ErrorCode.MAPPING_ERROR if error_type in _MAPPING_ERRORS else ErrorCode.ES_400
    if 400 <= status < 500:
        return ErrorCode.ES_4XX
    return ErrorCode.ES_UNEXPECTED


class OutcomeKind(enum.Enum):
    """The final verdict for one op after 409 confirmation."""

    APPLIED = "APPLIED"  # written now
    ALREADY_APPLIED = "ALREADY_APPLIED"  # 409 and the stored version equals ours
    AHEAD = "AHEAD"  # 409 and Elasticsearch holds a newer version: re-read the truth
    RETRY = "RETRY"  # failed; `code` is TRANSIENT or SYSTEMIC
    POISON = "POISON"  # failed; `code` is POISON: DLQ


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    op: IndexOp
    kind: OutcomeKind
    code: ErrorCode | None = None
    message: str | None = None
    stored_version: int | None = None

    @property
    def finished(self) -> bool:
        """True when the op needs nothing more (applied now or before)."""
        return self.kind in (OutcomeKind.APPLIED, OutcomeKind.ALREADY_APPLIED)

    @property
    def systemic(self) -> bool:
        """True when the cluster, not the event, is at fault (`ErrorCode.disposition`)."""
        return self.code is not None and self.code.disposition is Disposition.SYSTEMIC

    @classmethod
    def failed(
        cls, op: IndexOp, code: ErrorCode, message: str, stored_version: int | None = None
    ) -> WriteOutcome:
        """A RETRY or POISON outcome, as the code's disposition says."""
        poison = code.disposition is Disposition.POISON
        kind = OutcomeKind.POISON if poison else OutcomeKind.RETRY
        return cls(op, kind, code, message, stored_version)


class SinkObserver(Protocol):
    """Optional metrics hooks; `consumer.observability.metrics` can implement them."""

    def bulk_done(self, actions: int, seconds: float) -> None: ...

    def outcome(self, outcome: WriteOutcome) -> None: ...


class Sink:
    """Writes ops and returns a confirmed `WriteOutcome` per op, in the order given."""

    def __init__(
        self,
        index: SearchIndex,
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
        for position, result in enumerate(results):
            code = classify(result)
            if code is ErrorCode.ES_409:
                conflicts.setdefault(result.op.alias, []).append(position)
                outcomes.append(None)
            else:
                outcomes.append(_final(result, code))
        for alias, positions in conflicts.items():
            await self._confirm(alias, [results[p].op for p in positions], positions, outcomes)
        if self._observer is not None:
            self._observer.bulk_done(len(ops), self._clock() - started)
        final = [o for o in outcomes if o is not None]
        if len(final) != len(ops):  # every position is filled above; this is a guard
            raise RuntimeError("sink lost an outcome")
        if self._observer is not None:
            for outcome in final:
                self._observer.outcome(outcome)
        return final

    async def stored_projections(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredProjection | None]:
        """The stored projection facts of `ids` (`SearchIndex.get_projections`)."""
        return await self._index.get_projections(alias, ids)

    async def _confirm(
        self,
        alias: str,
        ops: list[IndexOp],
        positions: list[int],
        outcomes: list[WriteOutcome | None],
    ) -> None:
        """Turn 409s into ALREADY_APPLIED / AHEAD / RETRY by reading the stored versions."""
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


def _final(result: ItemResult, code: ErrorCode | None) -> WriteOutcome:
    if code is None:
        return WriteOutcome(result.op, OutcomeKind.APPLIED, stored_version=result.op.version)
    message = f"{result.status} {result.error_type}: {result.reason}"
    return WriteOutcome.failed(result.op, code, message)


@dataclass(frozen=True, slots=True)
class BulkSizer:
    """Splits ops into bulk requests of at most `max_actions` ops and about `max_bytes` bytes.

    The byte count is the NDJSON size (action line + body + two newlines). An op larger than
    `max_bytes` on its own travels alone; keep `max_bytes` well below the cluster's
    ``http.max_content_length`` (100 MB by default).
    """

    max_actions: int = 500
    max_bytes: int = 5 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.max_actions < 1 or self.max_bytes < 1:
            raise ValueError("max_actions and max_bytes must be >= 1")

    @staticmethod
    def op_bytes(op: IndexOp) -> int:
        return len(op.action_json()) + len(op.body_json) + 2

    def chunks(self, ops: Sequence[IndexOp]) -> Iterator[list[IndexOp]]:
        chunk: list[IndexOp] = []
        size = 0
        for op in ops:
            cost = self.op_bytes(op)
            if chunk and (len(chunk) >= self.max_actions or size + cost > self.max_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(op)
            size += cost
        if chunk:
            yield chunk


class EsIndex:
    """`SearchIndex` over `AsyncElasticsearch`. Chunks run one after another, in order.

    `require_alias` is True everywhere but in the rebuild, the one writer allowed to address a
    physical index (the index it fills before the alias swap; docs/design.md, Rebuild).
    """

    def __init__(
        self,
        client: AsyncElasticsearch,
        *,
        sizer: BulkSizer | None = None,
        require_alias: bool = True,
    ) -> None:
        self._client = client
        self._sizer = sizer if sizer is not None else BulkSizer()
        self._require_alias = require_alias

    async def bulk_index(self, ops: Sequence[IndexOp]) -> list[ItemResult]:
        results: list[ItemResult] = []
        for chunk in self._sizer.chunks(ops):
            results.extend(await self._bulk(chunk))
        return results

    async def _bulk(self, chunk: list[IndexOp]) -> list[ItemResult]:
        lines: list[bytes] = []
        for op in chunk:
            lines.append(op.action_json())
            lines.append(op.body_json)
        try:
            # The client's NDJSON serializer passes bytes lines through unchanged; the type
            # stubs only know dicts, hence the cast.
            response = await self._client.bulk(
                operations=cast(Any, lines),
                require_alias=self._require_alias,
                filter_path="items.*.status,items.*.error.type,items.*.error.reason",
            )
        except ApiError as exc:
            error = es_error(exc)
            return [ItemResult(op, error.status, error.type, error.reason) for op in chunk]
        except ConnectionTimeout as exc:
            return [ItemResult(op, NO_RESPONSE, TIMEOUT_ERROR, str(exc)) for op in chunk]
        except TransportError as exc:
            return [ItemResult(op, NO_RESPONSE, CONNECTION_ERROR, str(exc)) for op in chunk]
        return _items(chunk, response.body)

    async def get_versions(self, alias: str, ids: Sequence[str]) -> dict[str, int | None]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        try:
            response = await self._client.mget(index=alias, ids=wanted, source=False, realtime=True)
        except ApiError as exc:
            error = es_error(exc)
            code = _mget_code(error.status, error.type)
            raise TransientError(code, f"mget {alias}: {error.type}: {error.reason}") from exc
        except TransportError as exc:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"mget {alias}: {exc}") from exc
        versions: dict[str, int | None] = {}
        for doc in response.body.get("docs", []):
            error = doc.get("error")
            if error is not None:
                etype = error.get("type") if isinstance(error, dict) else str(error)
                missing = etype == "index_not_found_exception"
                code = ErrorCode.ALIAS_MISSING if missing else ErrorCode.ES_MGET
                raise TransientError(code, f"mget {alias}/{doc.get('_id')}: {etype}")
            versions[doc["_id"]] = int(doc["_version"]) if doc.get("found") else None
        return {doc_id: versions.get(doc_id) for doc_id in wanted}

    async def get_projections(
        self, alias: str, ids: Sequence[str]
    ) -> dict[str, StoredProjection | None]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        try:
            response = await self._client.mget(index=alias, ids=wanted, realtime=True)
        except ApiError as exc:
            error = es_error(exc)
            code = _mget_code(error.status, error.type)
            raise TransientError(code, f"mget {alias}: {error.type}: {error.reason}") from exc
        except TransportError as exc:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"mget {alias}: {exc}") from exc
        found: dict[str, StoredProjection | None] = {}
        for doc in response.body.get("docs", []):
            if doc.get("error") is not None:
                raise TransientError(ErrorCode.ES_MGET, f"mget {alias}/{doc.get('_id')}: error")
            found[doc["_id"]] = (
                stored_projection(int(doc["_version"]), doc.get("_source") or {})
                if doc.get("found")
                else None
            )
        return {doc_id: found.get(doc_id) for doc_id in wanted}

    async def refresh(self, alias: str) -> None:
        try:
            await self._client.indices.refresh(index=alias)
        except (ApiError, TransportError) as exc:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"refresh {alias}: {exc}") from exc


def stored_projection(version: int, source: Any) -> StoredProjection:
    """A `StoredProjection` from a stored `_source` (fields of the wrong type read as None).

    The whole `_source` is read, not only the hash fields: an edit made in Elasticsearch keeps
    the old ``projection_hash``, and only the recomputed `content_hash` shows it."""
    hash_ = source.get("projection_hash")
    schema = source.get("projection_schema_version")
    sync = source.get("sync_hash")
    return StoredProjection(
        version,
        hash_ if isinstance(hash_, str) else None,
        schema if isinstance(schema, int) and not isinstance(schema, bool) else None,
        sync if isinstance(sync, int) and not isinstance(sync, bool) else None,
        content_hash(source) if isinstance(source, dict) else None,
    )


def _mget_code(status: int, error_type: str | None) -> ErrorCode:
    """The code of a failed mget: the status's, but never poison (no document was refused)."""
    code = status_code(status, error_type)
    return ErrorCode.ES_MGET if code.disposition is Disposition.POISON else code


def _items(chunk: list[IndexOp], body: Any) -> list[ItemResult]:
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list) or len(items) != len(chunk):
        return [ItemResult(op, NO_RESPONSE, BAD_RESPONSE_ERROR, "bulk items") for op in chunk]
    results: list[ItemResult] = []
    for op, item in zip(chunk, items, strict=True):
        detail: dict[str, Any] = {}
        if isinstance(item, dict) and item:
            detail = next(iter(item.values()))
        error = detail.get("error")
        etype = reason = None
        if isinstance(error, dict):
            etype, reason = error.get("type"), error.get("reason")
        results.append(ItemResult(op, int(detail.get("status", NO_RESPONSE)), etype, reason))
    return results
