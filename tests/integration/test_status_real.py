"""`searchsync status` against the real stack: unhealthy without a consumer, healthy with one."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

import orjson
import pytest
from searchsync.cli import main
from searchsync.exit_codes import ExitCode

from tests.integration.consumer_harness import (
    InProcessConsumer,
    drop_indices,
    harness_env,
    prepare_index,
)

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _status(endpoint: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["status", "--json", "--consumer", endpoint])
    return code, orjson.loads(capsys.readouterr().out)


async def test_status_sees_the_group_the_alias_and_the_consumer(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = _free_port()
    env = harness_env("status", SEARCHSYNC_OBSERVABILITY_METRICS_PORT=str(port))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    endpoint = f"http://127.0.0.1:{port}"
    consumer = InProcessConsumer({**os.environ, **env})
    await prepare_index(consumer.settings)
    try:
        code, report = await _status(endpoint, capsys)
        assert code == ExitCode.UNHEALTHY
        assert any("no consumer is running" in p for p in report["problems"]), report
        assert report["sections"]["consumers"]["consumers"][0]["reachable"] is False

        await consumer.start()
        code, report = await _status(endpoint, capsys)
        sections = report["sections"]
        assert code == ExitCode.OK, report["problems"]
        assert len(sections["group"]["members"]) == 1
        assert {p["topic"] for p in sections["group"]["partitions"]} == {"outbox.event.wiki_page"}
        [alias] = sections["aliases"]["aliases"]
        assert alias["write_index"] == f"{consumer.settings.alias('wiki_page')}_v1"
        assert alias["schema_version"] == alias["projector_schema_version"]
        assert sections["consumers"]["consumers"][0]["ready"] is True
        assert sections["dlq"]["total"] == 0  # this test's DLQ topic does not exist
        assert sections["outbox"]["rows"] >= 0
        # the repair wheel's state is read from MySQL (whatever this shared database holds)
        assert "wiki_page" in {w["aggregate_type"] for w in sections["repair"]["wheels"]}
    finally:
        if consumer.task is not None:
            assert await consumer.close() == 0
        await drop_indices(consumer.settings)
