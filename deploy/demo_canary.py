"""The freshness canary in `make demo` (docs/design.md, "The freshness canary")."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, MutableMapping

from confluent_kafka.admin import AdminClient, NewTopic

CANARY_ENV = {
    "SEARCHSYNC_CANARY_INTERVAL_S": "5",
    "SEARCHSYNC_PROJECTION_MODULES": "searchsync.projection.wiki_page,searchsync.watch.canary",
    "SEARCHSYNC_KAFKA_TOPICS": "outbox.event.wiki_page,outbox.event.searchsync_canary",
}
"""The demo turns the canary on; variables already set win."""


def canary_env(env: MutableMapping[str, str]) -> None:
    """Set `CANARY_ENV` in `env` where unset (no topic list where a topic regex is set)."""
    for key, value in CANARY_ENV.items():
        if "SEARCHSYNC_KAFKA_TOPIC_REGEX" not in env or key != "SEARCHSYNC_KAFKA_TOPICS":
            env.setdefault(key, value)


def ensure_canary_topic(bootstrap: str) -> None:
    """Create the canary's topic before the consumer subscribes (a consumer learns of a new
    topic only at its next metadata refresh)."""
    client = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic("outbox.event.searchsync_canary", num_partitions=1, replication_factor=1)
    for future in client.create_topics([topic], operation_timeout=20).values():
        try:
            future.result(timeout=30)
        except Exception as exc:  # already there from an earlier demo
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise


def canary_line(metrics: str) -> str | None:
    """The exporter's canary age line once a beat was committed and one is searchable (< 30 s)."""
    lines = metrics.splitlines()
    ages = [line for line in lines if line.startswith("searchsync_canary_age_seconds ")]
    beats = [line for line in lines if line.startswith("searchsync_canary_beats_total ")]
    if ages and beats and float(beats[0].split()[1]) > 0 and float(ages[0].split()[1]) < 30:
        return ages[0]
    return None


async def canary_age(metrics: Callable[[], str]) -> str:
    """What to say about the canary once a heartbeat is searchable (waits at most 60 s)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = canary_line(metrics())
        if line is not None:
            return f"freshness canary (MySQL commit -> searchable, last heartbeat): {line}"
        await asyncio.sleep(0.5)
    return "the canary's heartbeat is not searchable after 60 s: see the exporter's /metrics"
