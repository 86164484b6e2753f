"""A tiny HTTP/1.x server on the consumer's loop: ``GET /metrics``, ``/healthz`` (200 only when
ready: the readiness probe) and ``/livez`` (200 whenever the loop answers). One bounded request
per connection, no body; anything unparsable gets a 400 and a close.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final, Protocol

import orjson

from searchsync.errors import ConfigError
from searchsync.observability.metrics import CONTENT_TYPE

_MAX_LINE: Final = 8 * 1024
_MAX_HEADERS: Final = 100
_READ_TIMEOUT_S: Final = 10.0
_JSON: Final = "application/json"
_TEXT: Final = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class HealthReport:
    """Whether the consumer is ready and, if not, why; `details` is shown as is (JSON-able)."""

    ready: bool
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class Renders(Protocol):
    """What /metrics serves: a Prometheus text exposition (`CONTENT_TYPE`)."""

    def render(self) -> bytes: ...


class HealthServer:
    """Serves /metrics from `metrics` and /healthz from `health()` (called once per request)."""

    def __init__(
        self,
        host: str,
        port: int,
        metrics: Renders,
        health: Callable[[], HealthReport],
        *,
        read_timeout_s: float = _READ_TIMEOUT_S,
        port_setting: str = "observability.metrics_port",
    ) -> None:
        self._host = host
        self._requested_port = port
        self._metrics = metrics
        self._health = health
        self._read_timeout_s = read_timeout_s
        self._port_setting = port_setting
        self._server: asyncio.Server | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port (the ephemeral one when started with port 0)."""
        if self._port is None:
            raise RuntimeError("HealthServer.port before start()")
        return self._port

    async def start(self) -> None:
        """Bind and serve; a port in use is a `ConfigError` naming `port_setting`."""
        if self._server is not None:
            raise RuntimeError("HealthServer already started")
        try:
            self._server = await asyncio.start_server(
                self._serve, self._host, self._requested_port, limit=_MAX_LINE
            )
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise ConfigError(
                self._port_setting,
                "a port no other process on this host listens on (each `searchsync run` on one"
                " host needs its own: set SEARCHSYNC_"
                + self._port_setting.upper().replace(".", "_")
                + ", or 0 for any free port)",
                f"{self._host}:{self._requested_port} is already in use",
            ) from exc
        self._port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop accepting and wait for the server to shut down (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            await server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path = await asyncio.wait_for(
                    self._read_request(reader), self._read_timeout_s
                )
            except (ValueError, asyncio.LimitOverrunError, TimeoutError):  # 400 and close
                await _respond(writer, HTTPStatus.BAD_REQUEST, _TEXT, b"bad request\n")
                return
            status, content_type, body = self._route(method, path)
            await _respond(writer, status, content_type, b"" if method == "HEAD" else body)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
        line = await reader.readline()
        if not line.endswith(b"\n"):
            raise ValueError("no request line")
        parts = line.decode("ascii").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise ValueError("malformed request line")
        for _ in range(_MAX_HEADERS):
            header = await reader.readline()
            if not header.endswith(b"\n"):
                raise ValueError("truncated headers")
            if header in (b"\r\n", b"\n"):
                return parts[0], parts[1]
        raise ValueError("too many headers")

    def _route(self, method: str, target: str) -> tuple[HTTPStatus, str, bytes]:
        path = target.split("?", 1)[0]
        if path not in ("/metrics", "/healthz", "/livez"):
            return HTTPStatus.NOT_FOUND, _TEXT, b"not found\n"
        if method not in ("GET", "HEAD"):
            return HTTPStatus.METHOD_NOT_ALLOWED, _TEXT, b"method not allowed\n"
        if path == "/metrics":
            return HTTPStatus.OK, CONTENT_TYPE, self._metrics.render()
        if path == "/livez":
            return HTTPStatus.OK, _TEXT, b"alive\n"
        try:
            report = self._health()
        except Exception as exc:  # a broken health check is itself a reason not to be ready
            report = HealthReport(False, [f"health check failed: {exc!r}"])
        body = orjson.dumps(
            {"ready": report.ready, "reasons": report.reasons, "details": report.details},
            default=str,
        )
        status = HTTPStatus.OK if report.ready else HTTPStatus.SERVICE_UNAVAILABLE
        return status, _JSON, body + b"\n"


async def _respond(
    writer: asyncio.StreamWriter, status: HTTPStatus, content_type: str, body: bytes
) -> None:
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode("ascii") + body)
    await writer.drain()


async def serve_job_metrics(
    host: str, port: int, metrics: Renders, *, port_setting: str, details: dict[str, Any]
) -> HealthServer | None:
    """/metrics and an always-ready /healthz for an operator job on `port` (0: None, no server)."""
    if not port:
        return None
    server = HealthServer(
        host, port, metrics, lambda: HealthReport(ready=True, details=details),
        port_setting=port_setting,
    )  # fmt: skip
    await server.start()
    job = port_setting.split(".", 1)[0]
    logging.getLogger(__name__).info("%s metrics on http://%s:%d/metrics", job, host, server.port)
    return server
