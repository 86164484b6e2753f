"""The connector watch of `searchsync run` (searchsync/kafka/connector_watch.py): FAILED tasks are
restarted through Connect's REST API, once per check; a RUNNING connector is left alone; Connect
not answering, or a restart refused, is logged and never stops the consumer; the settings are
checked at start-up."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager

import pytest
from searchsync.config import load_settings
from searchsync.errors import ConfigError
from searchsync.kafka.connect import ConnectClient
from searchsync.kafka.connector_watch import FAILED, ConnectorWatch
from searchsync.observability.metrics import Metrics

from tests.fakes.connect_rest import FakeConnectRest


class Tasks:
    """The connector's tasks as Connect reports them (`answer`); a restart makes one RUNNING."""

    def __init__(self, *states: str) -> None:
        self.states = list(states)
        self.refuse_restart = False
        self.gets = 0
        self.on_get: Callable[[int], None] | None = None
        self.trace = "x.Y: boom\n\tat"

    def answer(self, method: str, path: str) -> tuple[int, bytes]:
        if method == "GET":
            assert path == "/connectors/searchsync-outbox/status"
            self.gets += 1
            if self.on_get is not None:
                self.on_get(self.gets)
            trace = {FAILED: self.trace}
            tasks = [
                {"id": n, "state": s, "worker_id": "w", "trace": trace.get(s)}
                for n, s in enumerate(self.states)
            ]
            body = {"name": "searchsync-outbox", "connector": {"state": "RUNNING"}, "tasks": tasks}
            return 200, json.dumps(body).encode()
        if self.refuse_restart:
            return 500, b'{"error_code":500}'
        self.states[int(path.rsplit("/", 2)[-2])] = "RUNNING"  # Connect restarts it
        return 204, b""


@asynccontextmanager
async def watched(
    *states: str, metrics: Metrics | None = None
) -> AsyncIterator[tuple[Tasks, FakeConnectRest, ConnectorWatch]]:
    """A watch over a Connect on a local port whose connector has tasks in `states`."""
    tasks = Tasks(*states)
    async with (
        FakeConnectRest(tasks.answer) as rest,
        aclosing(ConnectClient(rest.settings)) as client,
    ):
        yield tasks, rest, ConnectorWatch(client, interval_s=0.01, metrics=metrics or Metrics())


def _posts(rest: FakeConnectRest) -> list[str]:
    return [r for r in rest.requests if r.startswith("POST ")]


async def test_failed_tasks_are_restarted_and_running_ones_left_alone() -> None:
    metrics = Metrics()
    async with watched("RUNNING", FAILED, FAILED, metrics=metrics) as (_, rest, watch):
        assert await watch.check() == 2
        assert _posts(rest) == [
            "POST /connectors/searchsync-outbox/tasks/1/restart",
            "POST /connectors/searchsync-outbox/tasks/2/restart",
        ]
        assert await watch.check() == 0  # all RUNNING now: nothing more
        assert len(_posts(rest)) == 2
    assert b"searchsync_connector_task_restarts_total 2.0" in metrics.render()


async def test_connect_away_is_logged_once_per_outage_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with watched(FAILED) as (_, rest, watch):
        rest.down = True
        with caplog.at_level(logging.INFO, logger="searchsync.kafka.connector_watch"):
            for _ in range(3):
                assert await watch.check() == 0
            rest.down = False
            assert await watch.check() == 1
            rest.down = True
            assert await watch.check() == 0
    away = [r for r in caplog.records if "will try again" in r.getMessage()]
    assert len(away) == 2  # once per outage, not once per check
    assert any("task 0 is FAILED (x.Y: boom)" in r.getMessage() for r in caplog.records)


async def test_a_refused_restart_is_logged_not_counted(caplog: pytest.LogCaptureFixture) -> None:
    async with watched(FAILED) as (tasks, _, watch):
        tasks.refuse_restart = True
        with caplog.at_level(logging.WARNING, logger="searchsync.kafka.connector_watch"):
            assert await watch.check() == 0
    assert any("restart of task 0 failed" in r.getMessage() for r in caplog.records)


async def test_the_watch_checks_on_its_interval_until_stopped() -> None:
    third, stop = asyncio.Event(), asyncio.Event()
    async with watched("RUNNING") as (tasks, _, watch):
        tasks.on_get = lambda n: third.set() if n >= 3 else None
        task = asyncio.create_task(watch.run(stop))
        await asyncio.wait_for(third.wait(), 10)  # it checked again and again on its interval
        stop.set()
        await asyncio.wait_for(task, 5)  # and returns once stopped
    assert task.done() and task.exception() is None


def test_the_watch_settings_are_off_by_default_and_checked() -> None:
    c = load_settings({}).connect
    assert (c.restart_failed_tasks, c.watch_interval_s) == (False, 30.0)
    env = {"SEARCHSYNC_CONNECT_RESTART_FAILED_TASKS": "true"}
    on = load_settings({**env, "SEARCHSYNC_CONNECT_WATCH_INTERVAL_S": "5"}).connect
    assert (on.restart_failed_tasks, on.watch_interval_s) == (True, 5.0)
    for key, value in (("RESTART_FAILED_TASKS", "maybe"), ("WATCH_INTERVAL_S", "0")):
        with pytest.raises(ConfigError) as caught:
            load_settings({f"SEARCHSYNC_CONNECT_{key}": value})
        assert f"connect.{key.lower()}" in str(caught.value)


PURGED = (
    "org.apache.kafka.connect.errors.ConnectException: The connector is trying to read binlog "
    "starting at SourceInfo [currentBinlogFilename=mysql-bin.000054, currentBinlogPosition=95437"
    "], but this is no longer available on the server. Reconfigure the connector to use a "
    "snapshot when needed.\n\tat io.debezium.connector.mysql.MySqlConnectorTask.start"
)


async def test_a_task_failed_on_a_purged_binlog_is_reported_as_that_once_not_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with watched("RUNNING", FAILED) as (tasks, rest, watch):
        tasks.trace = PURGED
        with caplog.at_level(logging.ERROR, logger="searchsync.kafka.connector_watch"):
            assert await watch.check() == 0
            assert await watch.check() == 0
        assert _posts(rest) == []  # a restart would fail the same way
    assert watch.binlog_gone == {("searchsync-outbox", 1)}
    [record] = caplog.records  # once, not once per check
    message = record.getMessage()
    assert "task 1 is FAILED" in message and "binlog position" in message and "purged" in message
    assert "new Debezium snapshot" in message and "`searchsync rebuild`" in message
