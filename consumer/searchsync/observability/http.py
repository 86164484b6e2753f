"""The consumer's HTTP endpoints on its loop (aiohttp): ``GET /metrics``, ``/healthz`` (200 only
when ready: the readiness probe) and ``/livez`` (200 whenever the loop answers); any other path is
404, any other method 405."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import orjson
from aiohttp import web

from searchsync.errors import ConfigError
from searchsync.observability.metrics import CONTENT_TYPE

_IDLE_TIMEOUT_S: Final = 10.0
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
        read_timeout_s: float = _IDLE_TIMEOUT_S,
        port_setting: str = "observability.metrics_port",
    ) -> None:
        self._host = host
        self._requested_port = port
        self._metrics = metrics
        self._health = health
        self._read_timeout_s = read_timeout_s  # a connection idle this long is closed
        self._port_setting = port_setting
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port (the ephemeral one when started with port 0)."""
        if self._port is None:
            raise RuntimeError("HealthServer.port before start()")
        return self._port

    async def start(self) -> None:
        """Bind and serve; a port in use is a `ConfigError` naming `port_setting`."""
        if self._runner is not None:
            raise RuntimeError("HealthServer already started")
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, keepalive_timeout=self._read_timeout_s)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._requested_port).start()
        except OSError as exc:
            await runner.cleanup()
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
        self._runner = runner
        self._port = int(runner.addresses[0][1])

    async def close(self) -> None:
        """Stop accepting and wait for the server to shut down (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        path, method = request.path, request.method
        if path not in ("/metrics", "/healthz", "/livez"):
            return _response(404, _TEXT, b"not found\n")
        if method not in ("GET", "HEAD"):
            return _response(405, _TEXT, b"method not allowed\n")
        if path == "/metrics":
            return _response(200, CONTENT_TYPE, self._metrics.render())
        if path == "/livez":
            return _response(200, _TEXT, b"alive\n")
        try:
            report = self._health()
        except Exception as exc:  # a broken health check is itself a reason not to be ready
            report = HealthReport(False, [f"health check failed: {exc!r}"])
        body = orjson.dumps(
            {"ready": report.ready, "reasons": report.reasons, "details": report.details},
            default=str,
        )
        return _response(200 if report.ready else 503, _JSON, body + b"\n")


def _response(status: int, content_type: str, body: bytes) -> web.Response:
    return web.Response(status=status, body=body, headers={"Content-Type": content_type})


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
