"""A small client for Kafka Connect's REST API: a connector's status and the restart of a task, each
on a worker thread within ``[connect] request_timeout_s``. No answer, or one that is not a status,
is `ConnectUnavailable`; an unknown connector has state ``MISSING``."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from searchsync.config import ConnectSettings
from searchsync.errors import ConnectUnavailable

RUNNING: Final = "RUNNING"
MISSING: Final = "MISSING"
"""The state `ConnectClient.status` reports for a connector Connect does not know (404)."""

Fetch = Callable[[str, float], tuple[int, bytes]]
"""A ``GET`` (or empty ``POST``): ``(url, timeout_s) -> (HTTP status, body)``; `OSError` when there
is no answer."""


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
        """The connector and every task (at least one) are RUNNING."""
        return (
            self.state == RUNNING
            and bool(self.tasks)
            and all(t.state == RUNNING for t in self.tasks)
        )

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
            "tasks": [
                {"id": t.id, "state": t.state, "worker_id": t.worker_id, "trace": t.trace}
                for t in self.tasks
            ],
        }


def parse_status(name: str, body: Mapping[str, Any]) -> ConnectorStatus:
    try:
        connector = body["connector"]
        tasks = tuple(
            TaskStatus(
                id=int(task["id"]),
                state=str(task["state"]),
                worker_id=task.get("worker_id"),
                trace=_first_line(task.get("trace")),
            )
            for task in body.get("tasks", [])
        )
        return ConnectorStatus(
            name=str(body.get("name", name)),
            state=str(connector["state"]),
            worker_id=connector.get("worker_id"),
            tasks=tasks,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConnectUnavailable(f"connector {name}: not a status answer ({exc!r})") from exc


class ConnectClient:
    def __init__(
        self, settings: ConnectSettings, *, fetch: Fetch | None = None, post: Fetch | None = None
    ) -> None:
        self._settings = settings
        self._fetch = fetch or _urllib_fetch
        self._post = post or _urllib_post

    async def restart_task(self, task_id: int, name: str | None = None) -> None:
        connector = urllib.parse.quote(name or self._settings.connector, safe="")
        url = f"{self._settings.url}/connectors/{connector}/tasks/{int(task_id)}/restart"
        code, data = await self._call(self._post, url)
        if code not in (200, 202, 204):
            raise ConnectUnavailable(f"POST {url} answered {code}: {data[:200]!r}")

    async def status(self, name: str | None = None) -> ConnectorStatus:
        """The status of connector `name` (default ``[connect] connector``)."""
        connector = name or self._settings.connector
        url = f"{self._settings.url}/connectors/{urllib.parse.quote(connector, safe='')}/status"
        code, data = await self._call(self._fetch, url)
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

    async def _call(self, request: Fetch, url: str) -> tuple[int, bytes]:
        try:
            return await asyncio.to_thread(request, url, self._settings.request_timeout_s)
        except OSError as exc:
            raise ConnectUnavailable(
                f"Kafka Connect at {self._settings.url} did not answer ({exc}); is it running? "
                "(setting connect.url)"
            ) from exc


def _urllib_fetch(url: str, timeout_s: float) -> tuple[int, bytes]:
    return _urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}), timeout_s)


def _urllib_post(url: str, timeout_s: float) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    request = urllib.request.Request(url, data=b"", headers=headers, method="POST")
    return _urlopen(request, timeout_s)


def _urlopen(request: urllib.request.Request, timeout_s: float) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:  # a status other than 2xx: still an answer
        return int(exc.code), bytes(exc.read())


def _first_line(trace: object) -> str | None:
    if not isinstance(trace, str) or not trace.strip():
        return None
    return trace.strip().splitlines()[0][:500]
