"""HealthServer: malformed requests, idle clients, its port, and a port in use (what each path
answers is tests/unit/test_http_wire.py's)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest
from searchsync.errors import ConfigError
from searchsync.observability.http import HealthReport, HealthServer
from searchsync.observability.metrics import Metrics


def _health() -> HealthReport:
    return HealthReport(True, [], {"group": "g"})


@pytest.fixture
async def server() -> AsyncIterator[HealthServer]:
    server = HealthServer("127.0.0.1", 0, Metrics(), _health, read_timeout_s=2.0)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def _exchange(port: int, raw: bytes) -> bytes:
    """What the server sends for `raw` until it closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return data


@pytest.mark.parametrize(
    "raw",
    [
        b"garbage\r\n\r\n",
        b"GET /metrics SMTP/1.0\r\n\r\n",
        b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
        b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\n\r\n",  # HTTP/1.1 without a Host header
    ],
)
async def test_bad_requests_get_a_400_and_the_server_survives(
    server: HealthServer, raw: bytes
) -> None:
    assert re.match(rb"HTTP/1\.[01] 400 ", await _exchange(server.port, raw))
    again = await _exchange(
        server.port, b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert again.startswith(b"HTTP/1.1 200 OK\r\n") and again.endswith(b"\r\n\r\nalive\n")


@pytest.mark.parametrize("raw", [b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n"])
async def test_a_client_that_stops_sending_is_cut_off(raw: bytes) -> None:
    server = HealthServer("127.0.0.1", 0, Metrics(), _health, read_timeout_s=0.2)
    await server.start()
    try:
        assert await _exchange(server.port, raw) == b""  # closed, nothing answered
    finally:
        await server.close()


async def test_port_before_start_and_double_close() -> None:
    server = HealthServer("127.0.0.1", 0, Metrics(), _health)
    with pytest.raises(RuntimeError):
        _ = server.port
    await server.start()
    assert server.port > 0
    with pytest.raises(RuntimeError):
        await server.start()
    await server.close()
    await server.close()
    with pytest.raises(OSError):
        await asyncio.open_connection("127.0.0.1", server.port)


async def test_a_port_in_use_names_the_setting_to_change() -> None:
    first = HealthServer("127.0.0.1", 0, Metrics(), _health)
    await first.start()
    try:
        second = HealthServer("127.0.0.1", first.port, Metrics(), _health)
        with pytest.raises(ConfigError) as caught:
            await second.start()
        assert caught.value.key == "observability.metrics_port"
        assert "SEARCHSYNC_OBSERVABILITY_METRICS_PORT" in caught.value.expected
        assert f"127.0.0.1:{first.port} is already in use" in str(caught.value)
        other = HealthServer("127.0.0.1", first.port, Metrics(), _health, port_setting="x.y")
        with pytest.raises(ConfigError) as caught:
            await other.start()
        assert caught.value.key == "x.y"
    finally:
        await first.close()
