"""The two publishing paths of the relay benchmark, each with its own database, topic, consumer
group and index (bench/README.md, "Relay against Debezium").

- ``debezium``: pages written to the stack's database; Debezium publishes them to the shared
  topic (``outbox.event.wiki_page``).
- ``relay``: pages written to a scratch database ``benchrelay_<hex>`` (deploy/local/migrate.sh;
  Debezium does not capture it) and published by ``searchsync relay run`` processes with the
  production defaults to a topic of their own, ``bench-relay-<hex>.wiki_page``.

Each path has a consumer group of one member (``searchsync run``) on its topic, writing to an
index prefix of its own.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import IO, Final

import aiomysql
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from searchsync.clock import Deadline
from searchsync.config import Settings, load_settings
from searchsync.kafka.admin import ConfluentKafkaAdmin

from bench.common import consumer_env, open_app_pool
from tests.scratch import create_database, drop_database

SHARED_TOPIC: Final = "outbox.event.wiki_page"


@dataclass
class Path:
    """One publishing path: where its pages are written, published, consumed and indexed."""

    name: str
    env: dict[str, str]  # the consumer's (and the paced writer's) environment
    topic: str
    settings: Settings
    pool: aiomysql.Pool | None = None  # the application's pool on the path's database
    relays: list[asyncio.subprocess.Process] = field(default_factory=list)
    logs: list[IO[bytes]] = field(default_factory=list)

    @property
    def alias(self) -> str:
        return self.settings.alias("wiki_page")

    async def open_pool(self, writers: int) -> aiomysql.Pool:
        self.pool = await open_app_pool(self.settings.mysql, minsize=1, maxsize=writers + 2)
        return self.pool

    async def start_relays(self, n: int) -> None:
        for i in range(n):
            log = tempfile.NamedTemporaryFile(  # noqa: SIM115  # closed in stop_relays
                prefix=f"relay-bench-{i}-", suffix=".log", delete=False
            )
            self.logs.append(log)
            argv = [sys.executable, "-m", "searchsync", "relay", "run"]
            relay = await asyncio.create_subprocess_exec(
                *argv, env=self.env, stdout=log, stderr=log
            )
            self.relays.append(relay)

    def pause_relays(self, paused: bool) -> None:
        """SIGSTOP (or SIGCONT) the relays: rows pile up while they are stopped."""
        for p in self.relays:
            p.send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def check_relays(self) -> None:
        for p, log in zip(self.relays, self.logs, strict=True):
            if p.returncode is not None:
                raise RuntimeError(f"a relay exited early with {p.returncode}; log {log.name}")

    async def stop_relays(self) -> list[str]:
        notes: list[str] = []
        for p in self.relays:
            p.terminate()
        for p, log in zip(self.relays, self.logs, strict=True):
            code = await p.wait()
            log.close()
            if code != 0:
                notes.append(f"a relay exited with {code}; log {log.name}")
            else:
                os.unlink(log.name)
        self.relays, self.logs = [], []
        return notes


def debezium_path(u: str) -> Path:
    env = consumer_env(f"benchrelay-dbz-{u}", f"benchrdbz{u}")
    return Path("debezium", env, SHARED_TOPIC, load_settings(env))


def relay_path(u: str, bootstrap: str) -> Path:
    """Create the relay path's scratch database and topic (blocking)."""
    database, topic = f"benchrelay_{u}", f"bench-relay-{u}.wiki_page"
    create_database(database)
    partitions = ConfluentKafkaAdmin({"bootstrap.servers": bootstrap}).wait_for_leaders(
        SHARED_TOPIC, Deadline(time.monotonic, 30.0)
    )
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, len(partitions), 1)]).values():
        f.result(timeout=60)
    ConfluentKafkaAdmin({"bootstrap.servers": bootstrap}).wait_for_leaders(
        topic, Deadline(time.monotonic, 60.0)
    )
    env = consumer_env(f"benchrelay-rly-{u}", f"benchrrly{u}")
    env.update(
        {
            "SEARCHSYNC_MYSQL_DATABASE": database,
            "SEARCHSYNC_KAFKA_TOPICS": topic,
            "SEARCHSYNC_RELAY_ENABLED": "true",
            "SEARCHSYNC_RELAY_TOPIC_TEMPLATE": f"bench-relay-{u}.{{type}}",
        }
    )
    return Path("relay", env, topic, load_settings(env))


def drop_relay_path(path: Path, bootstrap: str) -> None:
    """Drop the relay path's database and topic (blocking)."""
    drop_database(path.settings.mysql.database)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.delete_topics([path.topic]).values():
        f.result(timeout=60)
