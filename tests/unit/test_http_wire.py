"""What a client sees of /metrics, /healthz and /livez, byte for byte: the status line, the
Content-Type and the body of each path and method, ready, not ready and with a broken health
check; through a raw socket and through an HTTP client library."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from searchsync.observability.http import HealthReport, HealthServer
from searchsync.observability.metrics import CONTENT_TYPE, Metrics

TEXT = "text/plain; charset=utf-8"
JSON = "application/json"
READY = HealthReport(True, [], {"group": "g"})
NOT_READY = HealthReport(False, ["no partitions assigned"], {"blocked": [{"partition": 3}]})


def _broken() -> HealthReport:
    raise RuntimeError("boom")


Health = Callable[[], HealthReport]
# (method, target, health) -> (status line, Content-Type, body; None: the metrics exposition)
CASES: list[tuple[str, str, Health, str, str, bytes | None]] = [
    ("GET", "/metrics", lambda: READY, "HTTP/1.1 200 OK", CONTENT_TYPE, None),
    ("GET", "/metrics?name=x", lambda: NOT_READY, "HTTP/1.1 200 OK", CONTENT_TYPE, None),
    ("HEAD", "/metrics", lambda: READY, "HTTP/1.1 200 OK", CONTENT_TYPE, b""),
    (
        "GET", "/healthz", lambda: READY, "HTTP/1.1 200 OK", JSON,
        b'{"ready":true,"reasons":[],"details":{"group":"g"}}\n',
    ),
    (
        "GET", "/healthz?verbose=1", lambda: NOT_READY, "HTTP/1.1 503 Service Unavailable", JSON,
        b'{"ready":false,"reasons":["no partitions assigned"],'
        b'"details":{"blocked":[{"partition":3}]}}\n',
    ),
    (
        "GET", "/healthz", _broken, "HTTP/1.1 503 Service Unavailable", JSON,
        b'{"ready":false,"reasons":["health check failed: RuntimeError(\'boom\')"],'
        b'"details":{}}\n',
    ),
    ("HEAD", "/healthz", lambda: NOT_READY, "HTTP/1.1 503 Service Unavailable", JSON, b""),
    ("GET", "/livez", lambda: READY, "HTTP/1.1 200 OK", TEXT, b"alive\n"),
    ("GET", "/livez", _broken, "HTTP/1.1 200 OK", TEXT, b"alive\n"),
    ("GET", "/nope", lambda: READY, "HTTP/1.1 404 Not Found", TEXT, b"not found\n"),
    ("GET", "/", lambda: READY, "HTTP/1.1 404 Not Found", TEXT, b"not found\n"),
    ("POST", "/nope", lambda: READY, "HTTP/1.1 404 Not Found", TEXT, b"not found\n"),
    ("GET", "/metrics/x", lambda: READY, "HTTP/1.1 404 Not Found", TEXT, b"not found\n"),
    ("POST", "/metrics", lambda: READY, "HTTP/1.1 405 Method Not Allowed", TEXT,
     b"method not allowed\n"),
    ("DELETE", "/healthz", lambda: READY, "HTTP/1.1 405 Method Not Allowed", TEXT,
     b"method not allowed\n"),
    ("PUT", "/livez", lambda: READY, "HTTP/1.1 405 Method Not Allowed", TEXT,
     b"method not allowed\n"),
]  # fmt: skip


@pytest.fixture
async def metrics() -> AsyncIterator[Metrics]:
    metrics = Metrics()
    metrics.tombstone()
    yield metrics


async def _raw(port: int, method: str, target: str) -> tuple[str, str, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = f"{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    writer.write(
        request.encode() + (b"Content-Length: 0\r\n" if method in ("POST", "PUT") else b"")
    )
    writer.write(b"\r\n")
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 5)  # Connection: close: read to EOF
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("ascii").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return status_line, headers["content-type"], body


@pytest.mark.parametrize(("method", "target", "health", "line", "content_type", "body"), CASES)
async def test_responses_are_byte_identical(
    metrics: Metrics,
    method: str,
    target: str,
    health: Health,
    line: str,
    content_type: str,
    body: bytes | None,
) -> None:
    server = HealthServer("127.0.0.1", 0, metrics, health)
    await server.start()
    try:
        seen = await _raw(server.port, method, target)
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, f"http://127.0.0.1:{server.port}{target}") as response,
        ):
            library = (
                f"HTTP/1.1 {response.status} {response.reason}",
                response.headers["Content-Type"],
                await response.read(),
            )
    finally:
        await server.close()
    expected = (line, content_type, metrics.render() if body is None else body)
    assert seen == expected
    assert library == expected
