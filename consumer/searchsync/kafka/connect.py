"""A small client for Kafka Connect's REST API (aiohttp): a connector's status and the restart of a
task, each within ``[connect] request_timeout_s``, on one session per client, which `aclose`
closes (``async with contextlib.aclosing(client)``). No answer, or one that is not a status, is
`ConnectUnavailable`; an unknown connector has state ``MISSING``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final, Protocol
from urllib.parse import quote

import aiohttp

from searchsync.config import ConnectSettings
from searchsync.errors import ConnectUnavailable

RUNNING: Final = "RUNNING"
MISSING: Final = "MISSING"
"""The state `ConnectClient.status` reports for a connector Connect does not know (404)."""


@dataclass(frozen=True, slots=True)
class TaskStatus:
    id: int
    state: str
    worker_id: str | None = None
    trace: str | None = None  # the first line of a FAILED task's stack trace


@dataclass(frozen=True, slots=True)
class ConnectorStatus:
    name: str
    state: str
    worker_id: str | None = None
    tasks: tuple[TaskStatus, ...] = ()

    @property
    def running(self) -> bool:
        """The connector and every task (at least one) are RUNNING: no `problems`."""
        return not self.problems()

    def problems(self) -> list[str]:
        """Why it is not `running`, one reason each."""
        if self.state == MISSING:
            return [f"connector {self.name} is not registered in Kafka Connect"]
        reasons: list[str] = []
        if self.state != RUNNING:
            reasons.append(f"connector {self.name} is {self.state}")
        if not self.tasks:
            reasons.append(f"connector {self.name} has no tasks")
        for task in self.tasks:
            if task.state != RUNNING:
                detail = f": {task.trace}" if task.trace else ""
                reasons.append(f"task {task.id} of {self.name} is {task.state}{detail}")
        return reasons

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "worker_id": self.worker_id,
            "running": self.running,
            "tasks": [asdict(t) for t in self.tasks],
        }


def parse_status(name: str, body: Mapping[str, Any]) -> ConnectorStatus:
    try:
        connector = body["connector"]
        tasks = tuple(
            TaskStatus(
                int(t["id"]),
                str(t["state"]),
                worker_id=t.get("worker_id"),
                trace=_trace(t.get("trace")),
            )
            for t in body.get("tasks", [])
        )
        state, worker = str(connector["state"]), connector.get("worker_id")
        return ConnectorStatus(str(body.get("name", name)), state, worker_id=worker, tasks=tasks)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConnectUnavailable(f"connector {name}: not a status answer ({exc!r})") from exc


class ConnectorState(Protocol):
    """The connector's state and its tasks' restart (`ConnectClient`; the tests' fake)."""

    async def status(self, name: str | None = None) -> ConnectorStatus: ...

    async def restart_task(self, task_id: int) -> None: ...


class ConnectClient:
    def __init__(self, settings: ConnectSettings) -> None:
        self._settings = settings
        self._session: aiohttp.ClientSession | None = None  # opened on first use, on its loop

    async def aclose(self) -> None:
        """Close the session (idempotent; the next call opens a new one)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def restart_task(self, task_id: int) -> None:
        connector = quote(self._settings.connector, safe="")
        url = f"{self._settings.url}/connectors/{connector}/tasks/{int(task_id)}/restart"
        code, data = await self._call("POST", url)
        if code not in (200, 202, 204):
            raise ConnectUnavailable(f"POST {url} answered {code}: {data[:200]!r}")

    async def status(self, name: str | None = None) -> ConnectorStatus:
        """The status of connector `name` (default ``[connect] connector``)."""
        connector = name or self._settings.connector
        url = f"{self._settings.url}/connectors/{quote(connector, safe='')}/status"
        code, data = await self._call("GET", url)
        if code == 404:
            return ConnectorStatus(connector, MISSING)
        if code != 200:
            raise ConnectUnavailable(f"GET {url} answered {code}: {data[:200]!r}")
        try:
            body = json.loads(data)
        except ValueError as exc:
            raise ConnectUnavailable(f"GET {url}: the answer is not JSON") from exc
        if not isinstance(body, dict):
            raise ConnectUnavailable(f"GET {url}: the answer is not a JSON object")
        return parse_status(connector, body)

    async def _call(self, method: str, url: str) -> tuple[int, bytes]:
        """The status and body of one request; any status is an answer."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                headers={"Accept": "application/json"},
                timeout=aiohttp.ClientTimeout(total=self._settings.request_timeout_s),
            )
        post = method == "POST"  # an empty JSON body
        headers = {"Content-Type": "application/json"} if post else None
        try:
            async with self._session.request(
                method, url, data=b"" if post else None, headers=headers
            ) as response:
                return response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            why = str(exc) if not isinstance(exc, TimeoutError) else "timed out"
            raise ConnectUnavailable(
                f"Kafka Connect at {self._settings.url} did not answer ({why}); is it running? "
                "(setting connect.url)"
            ) from exc


def _trace(trace: object) -> str | None:
    if not isinstance(trace, str) or not trace.strip():
        return None
    return trace.strip().splitlines()[0][:500]
