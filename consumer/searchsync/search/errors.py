"""Reading Elasticsearch's error answers (`es_error`), mapping them to an `ErrorCode`
(`status_code`), and translating a request's failure (`engine_call`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from elastic_transport import TransportError
from elasticsearch import ApiError

from searchsync.errors import ErrorCode, TransientError

_MAPPING_ERRORS = frozenset(
    {
        "mapper_parsing_exception",
        "document_parsing_exception",
        "strict_dynamic_mapping_exception",
        "illegal_argument_exception",
    }
)


@dataclass(frozen=True, slots=True)
class EsError:
    status: int
    type: str | None
    reason: str | None

    def __str__(self) -> str:
        return f"{self.status} {self.type}: {self.reason}"


def es_error(exc: ApiError) -> EsError:
    """The status, type and reason of `exc` (any answer shape); the reason falls back to the
    message."""
    status = exc.meta.status
    body = exc.body
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        etype, reason = error.get("type"), error.get("reason")
        return EsError(
            status,
            etype if isinstance(etype, str) else None,
            reason if isinstance(reason, str) else None,
        )
    if isinstance(error, str):
        return EsError(status, None, error)
    return EsError(status, None, str(exc.message))


def status_code(status: int, error_type: str | None) -> ErrorCode:
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


@contextmanager
def engine_call(
    doing: str, refused: Callable[[EsError], Exception] | None = None
) -> Iterator[None]:
    """Raise a refusal as `refused(error)` (default: `TransientError` ``ES_UNEXPECTED``) and no
    answer as `TransientError` ``ES_UNAVAILABLE``, both naming `doing`."""
    try:
        yield
    except ApiError as exc:
        error = es_error(exc)
        if refused is None:
            raise TransientError(ErrorCode.ES_UNEXPECTED, f"{doing}: {error}") from exc
        raise refused(error) from exc
    except TransportError as exc:
        raise TransientError(ErrorCode.ES_UNAVAILABLE, f"{doing}: {exc}") from exc
