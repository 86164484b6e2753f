"""The ``[relay]`` section: `searchsync relay`, the outbox's polling publisher (docs/relay.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from searchsync.config._reader import _Section

_TABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True, slots=True)
class RelaySettings:
    """How `searchsync relay` claims, publishes and retries outbox rows.

    `enabled`: the relay, not Debezium, publishes (``outbox prune`` then deletes only PUBLISHED
    rows); `claim_timeout_s`: the ``locked_at`` age after which a claim is taken back;
    `max_attempts`: failures before a row is DEAD; `metrics_port` 0: no metrics.
    """

    enabled: bool = False
    table: str = "search_outbox"
    batch_size: int = 100
    poll_interval_s: float = 0.2
    claim_timeout_s: float = 60.0
    max_attempts: int = 10
    publish_timeout_s: float = 30.0
    topic_template: str = "outbox.event.{type}"
    stats_interval_s: float = 5.0
    metrics_port: int = 0


def _relay(r: _Section) -> RelaySettings:
    template = r.topic_template("topic_template")
    publish_timeout = r.number("publish_timeout_s", 0.0, 3_600.0, lo_open=True)
    claim_timeout = r.number("claim_timeout_s", 0.0, 86_400.0, lo_open=True)
    r.ordered("publish_timeout_s", publish_timeout, "claim_timeout_s", claim_timeout, strict=True)
    return RelaySettings(
        enabled=r.boolean("enabled"),
        table=r.string("table", _TABLE, "a table name like 'search_outbox'"),
        batch_size=r.integer("batch_size", 1, 10_000),
        poll_interval_s=r.number("poll_interval_s", 0.0, 60.0, lo_open=True),
        claim_timeout_s=claim_timeout,
        max_attempts=r.integer("max_attempts", 1, 1_000),
        publish_timeout_s=publish_timeout,
        topic_template=template,
        stats_interval_s=r.number("stats_interval_s", 0.0, 3_600.0, lo_open=True),
        metrics_port=r.integer("metrics_port", 0, 65_535),
    )
