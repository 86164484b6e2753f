"""Reading Elasticsearch's error answers, in one place.

An error answer looks like ``{"error": {"type": ..., "reason": ...}, "status": 4xx}``; older
nodes and proxies may answer ``{"error": "text"}`` or a body that is not JSON at all.
`es_error` reads any of them into an `EsError`; the sink and the index admin both use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from elasticsearch import ApiError

__all__ = ["EsError", "es_error"]


@dataclass(frozen=True, slots=True)
class EsError:
    """What an `ApiError` says: HTTP status, Elasticsearch's error ``type`` and ``reason``."""

    status: int
    type: str | None
    reason: str | None

    def __str__(self) -> str:
        return f"{self.status} {self.type}: {self.reason}"


def es_error(exc: ApiError) -> EsError:
    """The status, type and reason of `exc`; the reason falls back to the client's message."""
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
