"""The stack's services for fault injection: restarts through the project's own scripts
(deploy/local/*.sh, with the environment that names the stack), the connector through Kafka
Connect's REST API, MariaDB's `KILL CONNECTION` as root over the server's socket, and the
index write block through Elasticsearch's settings API."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.scratch import mysql_root

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "deploy" / "local"
SERVICES = ("mariadb", "kafka", "connect", "elasticsearch")


@dataclass(frozen=True, slots=True)
class Stack:
    es_url: str
    connect_url: str
    connector: str

    @classmethod
    def from_env(cls) -> Stack:
        env = os.environ.get
        return cls(
            es_url=env("SEARCHSYNC_ELASTICSEARCH_HOSTS", "http://127.0.0.1:9200").split(",")[0],
            connect_url=env("SEARCHSYNC_CONNECT_URL", "http://127.0.0.1:8083"),
            connector=env("CONNECTOR_NAME", "searchsync-outbox"),
        )

    def script(self, service: str, action: str, log: Path) -> None:
        """`deploy/local/<service>.sh <action>` (start waits for readiness, with its deadline)."""
        with log.open("ab") as out:
            subprocess.run(
                ["bash", str(SCRIPTS / f"{service}.sh"), action],
                check=True,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=300,
            )

    def restart(self, service: str, log: Path, pause_s: float = 0.0) -> None:
        self.script(service, "stop", log)
        time.sleep(pause_s)
        self.script(service, "start", log)

    def mysql_root(self, sql: str) -> str:
        return mysql_root(sql)

    def kill_connections(self, user: str) -> int:
        """KILL CONNECTION every session of `user`; how many were killed."""
        out = self.mysql_root(
            f"SELECT id FROM information_schema.processlist WHERE user = '{user}'"
        )
        ids = [line.strip() for line in out.splitlines() if line.strip().isdigit()]
        for i in ids:
            with contextlib.suppress(subprocess.CalledProcessError):  # ended meanwhile
                self.mysql_root(f"KILL CONNECTION {i}")
        return len(ids)

    def restart_connector_task(self) -> int:
        return self._http(
            "POST", f"{self.connect_url}/connectors/{self.connector}/tasks/0/restart"
        )[0]

    def connector_state(self) -> tuple[str, list[str]]:
        code, body = self._http("GET", f"{self.connect_url}/connectors/{self.connector}/status")
        if code != 200:
            return f"HTTP {code}", []
        s = json.loads(body)
        return s["connector"]["state"], [t["state"] for t in s.get("tasks", [])]

    def write_block(self, index: str, on: bool) -> None:
        body = json.dumps({"index.blocks.write": on}).encode()
        code, text = self._http("PUT", f"{self.es_url}/{index}/_settings", body)
        if code != 200:
            raise AssertionError(f"write block {on} on {index}: HTTP {code} {text[:200]}")

    def set_index(self, index: str, settings: dict[str, Any]) -> None:
        code, text = self._http(
            "PUT", f"{self.es_url}/{index}/_settings", json.dumps(settings).encode()
        )
        if code != 200:
            raise AssertionError(f"settings {settings} on {index}: HTTP {code} {text[:200]}")

    @staticmethod
    def _http(method: str, url: str, body: bytes | None = None) -> tuple[int, str]:
        req = urllib.request.Request(
            url, data=body, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except (urllib.error.URLError, OSError) as exc:
            return 0, str(exc)


def wait(check: Any, deadline_s: float, what: str, interval_s: float = 0.5) -> None:
    """Wait until `check()` is true (blocking); fail with `what` at the deadline."""
    end = time.monotonic() + deadline_s
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {deadline_s}s waiting for: {what}")
        time.sleep(interval_s)
