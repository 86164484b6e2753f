"""The one place the search engine's failures become searchsync's errors (`searchsync.errors`).

`status_code` maps an answer's status and error type to an `ErrorCode` (status `NO_RESPONSE`: no
answer came); `engine_call` turns a client exception in a block into the error to raise, by a
`Refused` policy for refusals. Both engines' clients raise the Elasticsearch client's exceptions
(`searchsync.search.opensearch` translates its own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from elastic_transport import ConnectionTimeout, TransportError
from elasticsearch import ApiError

from searchsync.errors import (
    AliasConflict,
    Disposition,
    ErrorCode,
    IndexAdminError,
    IndexExists,
    IndexMissing,
    InvalidRequest,
    TransientError,
)

NO_RESPONSE: Final = 0  # the status when no HTTP answer came (connection, timeout, ...)
TIMEOUT_ERROR: Final = "timeout"
CONNECTION_ERROR: Final = "connection_error"
BAD_RESPONSE_ERROR: Final = "bad_response"

_MAPPING_ERRORS = frozenset(
    {
        "mapper_parsing_exception",
        "document_parsing_exception",
        "strict_dynamic_mapping_exception",
        "illegal_argument_exception",
    }
)
_EXISTS = frozenset({"resource_already_exists_exception", "invalid_alias_name_exception"})
_CONFLICT = frozenset({"aliases_not_found_exception", "illegal_state_exception"})


@dataclass(frozen=True, slots=True)
class EsError:
    status: int
    type: str | None
    reason: str | None

    def __str__(self) -> str:
        return f"{self.status} {self.type}: {self.reason}"


def es_error(exc: ApiError | TransportError) -> EsError:
    """The status, type and reason of `exc` (any answer shape; no answer: `NO_RESPONSE`)."""
    if not isinstance(exc, ApiError):
        kind = TIMEOUT_ERROR if isinstance(exc, ConnectionTimeout) else CONNECTION_ERROR
        return EsError(NO_RESPONSE, kind, str(exc))
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        etype, reason = error.get("type"), error.get("reason")
        return EsError(
            exc.meta.status,
            etype if isinstance(etype, str) else None,
            reason if isinstance(reason, str) else None,
        )
    return EsError(exc.meta.status, None, error if isinstance(error, str) else str(exc.message))


_BY_STATUS: Final = {
    409: ErrorCode.ES_409,
    429: ErrorCode.ES_429,
    404: ErrorCode.ALIAS_MISSING,  # index_not_found_exception: the alias is missing; run index init
    401: ErrorCode.ES_AUTH,
    403: ErrorCode.ES_AUTH,
    408: ErrorCode.ES_TIMEOUT,
    413: ErrorCode.ES_TOO_LARGE,  # a single document above http.max_content_length
}


def status_code(status: int, error_type: str | None) -> ErrorCode:
    if status == NO_RESPONSE:
        return ErrorCode.ES_TIMEOUT if error_type == TIMEOUT_ERROR else ErrorCode.ES_UNAVAILABLE
    if status != 409 and error_type == "cluster_block_exception":  # 429 disk, 403 write block
        return ErrorCode.ES_BLOCKED
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ErrorCode.ES_5XX
    if status == 400:
        return ErrorCode.MAPPING_ERROR if error_type in _MAPPING_ERRORS else ErrorCode.ES_400
    return ErrorCode.ES_4XX if 400 <= status < 500 else ErrorCode.ES_UNEXPECTED


Refused = ErrorCode | Callable[[str, EsError], Exception]
"""What a refusal (an answer with an error status) becomes: a `TransientError` with this code, or
what the callable makes of (what was being done, the error)."""


@contextmanager
def engine_call(doing: str, refused: Refused = ErrorCode.ES_UNEXPECTED) -> Iterator[None]:
    """Raise the client's failure inside the block: no answer as a `TransientError`
    ``ES_UNAVAILABLE``, a refusal as `refused` says."""
    try:
        yield
    except (ApiError, TransportError) as exc:
        error = es_error(exc)
        if error.status == NO_RESPONSE:
            raise TransientError(ErrorCode.ES_UNAVAILABLE, f"{doing}: {error.reason}") from exc
        if isinstance(refused, ErrorCode):
            raise TransientError(refused, f"{doing}: {error}") from exc
        raise refused(doing, error) from exc


def read_refusal(doing: str, error: EsError) -> Exception:
    """A refused read: its status's code, never poison (``ES_MGET`` instead)."""
    code = status_code(error.status, error.type)
    if code.disposition is Disposition.POISON:
        code = ErrorCode.ES_MGET
    return TransientError(code, f"{doing}: {error.type}: {error.reason}")


def search_refusal(doing: str, error: EsError) -> Exception:
    """A refused search: a missing alias is ``ALIAS_MISSING``, a bad query `InvalidRequest`."""
    message = f"{doing}: {error.type}: {error.reason}"
    if error.type == "index_not_found_exception":
        return TransientError(ErrorCode.ALIAS_MISSING, message)
    if error.status == 400:
        return InvalidRequest(message)
    return TransientError(status_code(error.status, error.type), message)


def admin_refusal(name: str, error: EsError) -> Exception:
    """A refused index or alias operation on `name`: an `IndexAdminError`, or a `TransientError`
    for 429 and 5xx."""
    message = f"{error.type}: {error.reason}"
    if error.type in _EXISTS or (
        error.type == "invalid_index_name_exception" and "exists" in (error.reason or "")
    ):
        return IndexExists(name, message, error.type)
    if error.type == "index_not_found_exception":
        return IndexMissing(name, message, error.type)
    if error.type in _CONFLICT:
        return AliasConflict(name, message, error.type)
    if error.status == 429 or error.status >= 500:
        return TransientError(
            ErrorCode.ES_429 if error.status == 429 else ErrorCode.ES_5XX, message
        )
    return IndexAdminError(name, message, error.type)
