"""A fresh setup on the shared stack for tests/integration/test_schema_setup_real.py: a database
and three users of their own (`fresh`), the mariadb client as root or as one of them, the
`searchsync` CLI's output, and a Kafka Connect worker whose config declares the file provider.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.integration.conftest import CONNECT_URL, KAFKA
from tests.integration.conftest_mysql import root_socket
from tests.timing import deadline as deadline_after

__all__ = [
    "DEADLINE_S",
    "MYSQL_HOST",
    "MYSQL_PORT",
    "REPO",
    "STACK_DIR",
    "Fresh",
    "cli",
    "connect_worker",
    "delete_topics",
    "fresh",
    "mariadb",
    "poll",
    "request",
    "running",
]

REPO = Path(__file__).resolve().parents[2]
STACK_DIR = Path(os.environ.get("STACK_DIR", str(REPO / ".stack")))
MYSQL_HOST = os.environ.get("SEARCHSYNC_MYSQL_HOST", "127.0.0.1")
MYSQL_PORT = int(os.environ.get("SEARCHSYNC_MYSQL_PORT", "3306"))
DEADLINE_S = 120.0
FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"


@dataclass(frozen=True, slots=True)
class Fresh:
    tag: str
    database: str
    consumer: str
    app: str
    debezium: str
    password: str


def cli(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "searchsync", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def mariadb(sql: str, *, database: str | None = None, login: tuple[str, str] | None = None) -> int:
    """Run `sql` as root over the socket, or as `login` (user, password) over TCP; its exit code."""
    if login is None:
        how = [f"--socket={root_socket()}", "-uroot"]
    else:
        how = [f"-h{MYSQL_HOST}", f"-P{MYSQL_PORT}", f"-u{login[0]}", f"-p{login[1]}"]
    done = subprocess.run(
        ["mariadb", *how, *([database] if database else [])],
        input=sql,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode


@pytest.fixture
def fresh() -> Iterator[Fresh]:
    tag = uuid.uuid4().hex[:8]
    f = Fresh(
        f"fs{tag}", f"it_fs_{tag}", f"c_fs{tag}", f"a_fs{tag}", f"d_fs{tag}", uuid.uuid4().hex
    )
    accounts = [f"'{u}'@'%'" for u in (f.consumer, f.app, f.debezium)]
    create = "".join(f"CREATE USER {a} IDENTIFIED BY '{f.password}';" for a in accounts)
    assert mariadb(f"CREATE DATABASE `{f.database}`;{create}") == 0
    try:
        yield f
    finally:
        mariadb(f"DROP USER IF EXISTS {', '.join(accounts)}; DROP DATABASE `{f.database}`;")


def request(method: str, url: str, body: object | None = None) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def connect_worker(tmp_path: Path, tag: str) -> Iterator[str]:
    """The stack's Connect when its worker declares the file provider; else a worker of the
    test's own (stopped, and its storage topics deleted, at the end)."""
    props = STACK_DIR / "connect" / "worker.properties"
    if props.exists() and FILE_PROVIDER in props.read_text():
        yield CONNECT_URL
        return
    port, group = free_port(), f"it-{tag}-connect"
    env = {
        **os.environ,
        "STACK_DIR": str(tmp_path / "stack"),
        "SVC_DIR": str(tmp_path / "stack"),
        "DIST_DIR": str(STACK_DIR / "dist"),
        "CONNECT_PORT": str(port),
        "CONNECT_GROUP_ID": group,
        "CONNECT_HEAP": "512m",
        "CLI_BIN": str(Path(sys.executable).parent / "searchsync"),
    }
    script = str(REPO / "deploy" / "local" / "connect.sh")
    try:
        started = subprocess.run(["bash", script, "worker"], env=env, timeout=300, check=False)
        assert started.returncode == 0, "a Connect worker of the test's own did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        subprocess.run(["bash", script, "stop"], env=env, timeout=120, check=False)
        delete_topics([f"{group}-{kind}" for kind in ("configs", "offsets", "status")])


def delete_topics(names: list[str]) -> None:
    """Delete `names` and wait for the answer (a topic never created is fine)."""
    admin = AdminClient({"bootstrap.servers": KAFKA})  # alive until every answer is in
    futures = admin.delete_topics(names, operation_timeout=20)
    for future in futures.values():
        try:
            future.result(timeout=30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise


def running(url: str, name: str) -> bool:
    code, status = request("GET", f"{url}/connectors/{name}/status")
    if code != 200 or not isinstance(status, dict):
        return False
    tasks = status.get("tasks", [])
    failed = [t.get("trace", "")[:1500] for t in tasks if t["state"] == "FAILED"]
    assert not failed, f"connector task FAILED: {failed[0]}"
    return bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)


def poll(check: Callable[[], bool], what: str) -> None:
    deadline = deadline_after(DEADLINE_S)
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {DEADLINE_S}s waiting for: {what}")
