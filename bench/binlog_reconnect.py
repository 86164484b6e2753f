"""How long Debezium takes to read the binlog again after a MariaDB restart.

`python -m bench.binlog_reconnect [--keep-alive-ms 60000,2000]` against the stack the
environment names (deploy/local/env.sh). RESTARTS MariaDB: never run it against a stack other
people use. For each keep-alive interval, side by side in one run:

1. the connector's config (`searchsync schema connector`, as deploy/local/connect.sh has it) is
   PUT with `connect.keep.alive.interval.ms` set to it, and the bench waits for RUNNING and for
   one event;
2. MariaDB is restarted (`deploy/local/mariadb.sh stop`, `start`, which waits until it answers);
3. from the moment it answers, a page is written every 0.2 s; the figure is the time from
   "MariaDB answers" to the first of those events read from `outbox.event.wiki_page`.

At the end the stack's own config (its keep-alive) is registered again. Prints one line per
interval; asserts nothing (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from searchsync.kafka.outbox_connector import ConnectorTarget, Credentials, outbox_connector_config
from searchsync.mysql.pool import create_pool
from searchsync.writer import PageWriter

REPO = Path(__file__).resolve().parents[1]
TOPIC = "outbox.event.wiki_page"


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


def _connector_config(keep_alive_ms: int | None) -> dict[str, str]:
    """The stack's connector as deploy/local/connect.sh registers it (`searchsync schema
    connector`, its credentials in the worker's ``$STACK_DIR/connect/debezium.properties``)."""
    stack = Path(_env("STACK_DIR", str(REPO / ".stack")))
    target = ConnectorTarget(
        mysql_host=_env("MYSQL_HOST", "127.0.0.1"),
        mysql_port=int(_env("MYSQL_PORT", "3306")),
        database=_env("MYSQL_DATABASE", "searchsync"),
        server_id=int(_env("DEBEZIUM_SERVER_ID", "184054")),
        topic_prefix=_env("DEBEZIUM_TOPIC_PREFIX", "searchsync"),
        schema_history_topic=_env("DEBEZIUM_SCHEMA_HISTORY_TOPIC", "searchsync.schema-history"),
        kafka_bootstrap=f"127.0.0.1:{_env('KAFKA_PORT', '9092')}",
    )
    secrets = Credentials("file", str(stack / "connect" / "debezium.properties"))
    config = outbox_connector_config(target, secrets)
    if keep_alive_ms is not None:
        config["connect.keep.alive.interval.ms"] = str(keep_alive_ms)
    return config


def _put_connector(config: dict[str, str]) -> None:
    url = f"http://127.0.0.1:{_env('CONNECT_PORT', '8083')}"
    name = _env("CONNECTOR_NAME", "searchsync-outbox")
    subprocess.run(
        [
            "curl",
            "-sf",
            "-o",
            "/dev/null",
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/json",
            "--data",
            json.dumps(config),
            f"{url}/connectors/{name}/config",
        ],
        check=True,
    )


def _task_running(restarted: list[str]) -> None:
    """Wait until task 0 is RUNNING; a FAILED task is restarted (and recorded in `restarted`)."""
    url = f"http://127.0.0.1:{_env('CONNECT_PORT', '8083')}"
    name = _env("CONNECTOR_NAME", "searchsync-outbox")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["curl", "-s", f"{url}/connectors/{name}/status"], capture_output=True, text=True
        ).stdout
        try:
            tasks = json.loads(out).get("tasks", [])
        except ValueError:
            tasks = []
        states = [t.get("state") for t in tasks]
        if states == ["RUNNING"]:
            return
        if "FAILED" in states:
            trace = tasks[0].get("trace", "")
            causes = [line for line in trace.splitlines() if line.startswith("Caused by")]
            restarted.append(causes[0] if causes else trace[:200])
            subprocess.run(["curl", "-s", "-X", "POST", f"{url}/connectors/{name}/tasks/0/restart"])
        time.sleep(1)
    raise SystemExit("the connector task is not RUNNING after 120 s")


def _write(prefix: str, n: int) -> bool:
    """One page through `PageWriter` (row + outbox row in one transaction); False on failure."""

    async def create() -> None:
        pool = await create_pool(
            host=_env("MYSQL_HOST", "127.0.0.1"),
            port=int(_env("MYSQL_PORT", "3306")),
            user=_env("APP_DB_USER", "searchsync_app"),
            password=_env("APP_DB_PASSWORD", "searchsync_app"),
            database=_env("MYSQL_DATABASE", "searchsync"),
            minsize=1,
            maxsize=1,
        )
        try:
            await PageWriter(pool).create(f"{prefix}{n:05d}", "reconnect", "", {})
        finally:
            pool.close()
            await pool.wait_closed()

    try:
        asyncio.run(asyncio.wait_for(create(), 5))
        return True
    except Exception:  # MariaDB not answering yet
        return False


def _first_event(c: Consumer, prefix: str, deadline: float) -> float | None:
    while time.monotonic() < deadline:
        for m in c.consume(100, timeout=0.2):
            if m.error() is None and (m.key() or b"").startswith(prefix.encode()):
                return time.monotonic()
    return None


def _measure(keep_alive_ms: int) -> dict[str, Any]:
    restarted: list[str] = []
    _put_connector(_connector_config(keep_alive_ms))
    time.sleep(2)  # the PUT's reconfiguration starts asynchronously
    _task_running(restarted)
    c = Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{_env('KAFKA_PORT', '9092')}",
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    meta = c.list_topics(TOPIC, timeout=30).topics[TOPIC]
    c.assign([TopicPartition(TOPIC, p, -1) for p in meta.partitions])  # the end
    warm = f"bench-rc-{uuid.uuid4().hex[:8]}-w"
    for i in range(300):  # the connector restarted by the PUT: wait until it publishes
        _write(warm, i)
        if _first_event(c, warm, time.monotonic() + 1.0) is not None:
            break
    script = str(REPO / "deploy" / "local" / "mariadb.sh")
    subprocess.run(["bash", script, "stop"], check=True, capture_output=True)
    subprocess.run(["bash", script, "start"], check=True, capture_output=True)
    up = time.monotonic()
    prefix = f"bench-rc-{uuid.uuid4().hex[:8]}-"
    n, seen = 0, None
    while seen is None and time.monotonic() < up + 300:
        _write(prefix, n)
        n += 1
        seen = _first_event(c, prefix, time.monotonic() + 0.2)
    c.close()
    _task_running(restarted)
    return {
        "task_failures": restarted,
        "keep_alive_ms": keep_alive_ms,
        "reconnect_s": None if seen is None else seen - up,
        "pages_written": n,
    }


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.binlog_reconnect")
    p.add_argument("--keep-alive-ms", default="60000,2000")
    args = p.parse_args()
    try:
        for ms in (int(x) for x in args.keep_alive_ms.split(",")):
            r = _measure(ms)
            shown = "none in 300 s" if r["reconnect_s"] is None else f"{r['reconnect_s']:.1f} s"
            print(
                f"connect.keep.alive.interval.ms={ms}: MariaDB answering -> first new event"
                f" in Kafka {shown} ({r['pages_written']} pages written meanwhile);"
                f" task FAILED and restarted: {r['task_failures'] or 'never'}",
                flush=True,
            )
    finally:
        _put_connector(_connector_config(None))


if __name__ == "__main__":
    main()
