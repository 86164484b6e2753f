"""The connector watch's two calls on the real Kafka Connect (searchsync/kafka/connector_watch.py):
the status of the Debezium connector, and the restart of its task through the REST API, after
which the task is RUNNING again. A restart of the running task is what the watch does to a FAILED
one; making the real task fail on demand would need a MariaDB outage while Connect starts it
(a fault-suite schedule met it that way)."""

from __future__ import annotations

from contextlib import aclosing

import pytest
from searchsync.config import ConnectSettings
from searchsync.errors import ConnectUnavailable
from searchsync.kafka.connect import ConnectClient
from searchsync.kafka.connector_watch import ConnectorWatch
from searchsync.observability.metrics import Metrics

from tests.integration.conftest import CONNECT_URL
from tests.integration.consumer_harness import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_a_task_restarted_through_the_rest_api_runs_again() -> None:
    async with aclosing(ConnectClient(ConnectSettings(url=CONNECT_URL))) as client:
        before = await client.status()
        assert before.running, before.problems()
        await client.restart_task(before.tasks[0].id)

        async def running_again() -> bool:
            return (await client.status()).running

        await wait_for(running_again, 60, "the restarted task RUNNING", interval=0.5)
        # a running connector: one check of the watch restarts nothing
        assert await ConnectorWatch(client, interval_s=1.0, metrics=Metrics()).check() == 0


async def test_restarting_a_task_that_does_not_exist_is_an_error_that_says_so() -> None:
    async with aclosing(ConnectClient(ConnectSettings(url=CONNECT_URL))) as client:
        with pytest.raises(ConnectUnavailable, match="answered 404"):
            await client.restart_task(99)
