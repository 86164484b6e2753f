"""HealthServer: /metrics, /healthz ready and not ready, /livez, 404, and malformed requests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import orjson
import pytest
from searchsync.errors import ConfigError
from searchsync.observability.http import HealthReport, HealthServer
from searchsync.observability.metrics import Metrics


class _Health:
    def __init__(self) -> None:
        self.report = HealthReport(True, [], {"group": "g"})
        self.fail = False

    def __call__(self) -> HealthReport:
        if self.fail:
            raise RuntimeError("boom")
        return self.report


@pytest.fixture
async def served() -> AsyncIterator[tuple[HealthServer, _Health, Metrics]]:
    metrics, health = Metrics(), _Health()
    server = HealthServer("127.0.0.1", 0, metrics, health, read_timeout_s=2.0)
    await server.start()
    try:
        yield server, health, metrics
    finally:
        await server.close()


async def _exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 5)  # server closes: read to EOF
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    assert int(headers["content-length"]) == len(body)
    return status, headers, body


def _get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()


async def test_metrics_endpoint(served: tuple[HealthServer, _Health, Metrics]) -> None:
    server, _, metrics = served
    metrics.tombstone()
    status, headers, body = await _exchange(server.port, _get("/metrics"))
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    assert b"es_tombstone_written_total 1.0" in body


async def test_healthz_ready_and_not_ready(served: tuple[HealthServer, _Health, Metrics]) -> None:
    server, health, _ = served
    status, headers, body = await _exchange(server.port, _get("/healthz"))
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert orjson.loads(body) == {"ready": True, "reasons": [], "details": {"group": "g"}}

    health.report = HealthReport(False, ["no partitions assigned"], {})
    status, _, body = await _exchange(server.port, _get("/healthz?verbose=1"))
    assert status == 503
    assert orjson.loads(body)["reasons"] == ["no partitions assigned"]

    health.fail = True
    status, _, body = await _exchange(server.port, _get("/healthz"))
    assert status == 503
    assert "boom" in orjson.loads(body)["reasons"][0]


async def test_livez_answers_200_ready_or_not(
    served: tuple[HealthServer, _Health, Metrics],
) -> None:
    server, health, _ = served
    health.report = HealthReport(False, ["fenced"], {})
    status, _, body = await _exchange(server.port, _get("/livez"))
    assert status == 200 and body == b"alive\n"
    health.fail = True
    status, _, _ = await _exchange(server.port, _get("/livez"))
    assert status == 200


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"GET /nope HTTP/1.1\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
        (b"garbage\r\n\r\n", 400),
        (b"GET /metrics SMTP/1.0\r\n\r\n", 400),
        (b"\xff\xfe /metrics HTTP/1.1\r\n\r\n", 400),
        (b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n", 400),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\n", 400),  # EOF before the blank line
    ],
)
async def test_bad_requests_get_an_answer_and_the_server_survives(
    served: tuple[HealthServer, _Health, Metrics], raw: bytes, expected: int
) -> None:
    server, _, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(raw)
    await writer.drain()
    writer.write_eof()
    data = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert data.startswith(f"HTTP/1.1 {expected} ".encode())
    status, _, _ = await _exchange(server.port, _get("/healthz"))
    assert status == 200


async def test_client_that_never_sends_is_cut_off() -> None:
    server = HealthServer("127.0.0.1", 0, Metrics(), _Health(), read_timeout_s=0.2)
    await server.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        data = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        assert data.startswith(b"HTTP/1.1 400 ")
    finally:
        await server.close()


async def test_port_before_start_and_double_close() -> None:
    server = HealthServer("127.0.0.1", 0, Metrics(), _Health())
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
    first = HealthServer("127.0.0.1", 0, Metrics(), _Health())
    await first.start()
    try:
        second = HealthServer("127.0.0.1", first.port, Metrics(), _Health())
        with pytest.raises(ConfigError) as caught:
            await second.start()
        assert caught.value.key == "observability.metrics_port"
        assert "SEARCHSYNC_OBSERVABILITY_METRICS_PORT" in caught.value.expected
        assert f"127.0.0.1:{first.port} is already in use" in str(caught.value)
        other = HealthServer("127.0.0.1", first.port, Metrics(), _Health(), port_setting="x.y")
        with pytest.raises(ConfigError) as caught:
            await other.start()
        assert caught.value.key == "x.y"
    finally:
        await first.close()
