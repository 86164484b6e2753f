"""The one builder of Kafka consumer settings. Every consumer commits explicitly, and only what it
finished: auto commit and the automatic offset store are always off (docs/design.md, the commit
protocol)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from searchsync.config import KafkaSettings


def consumer_config(
    base: Mapping[str, Any],
    *,
    group_id: str,
    auto_offset_reset: str = "earliest",
    partition_eof: bool = False,
) -> dict[str, Any]:
    """A consumer over `base` (bootstrap servers and ``[kafka] extra``)."""
    return {
        **base,
        "group.id": group_id,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": auto_offset_reset,
        "enable.partition.eof": partition_eof,
    }


def member_config(kafka: KafkaSettings) -> dict[str, Any]:
    """The group member's consumer: cooperative-sticky assignment and ``auto.offset.reset=error``
    (the intake starts a partition without a committed offset itself, and blocks one below the log
    start: `kafka.gaps`)."""
    return {
        **consumer_config(
            kafka.client_config(), group_id=kafka.group_id, auto_offset_reset="error"
        ),
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": kafka.session_timeout_ms,
        "max.poll.interval.ms": kafka.max_poll_interval_ms,
    }
