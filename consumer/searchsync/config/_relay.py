"""The ``[relay]`` section: `searchsync relay`, the outbox's polling publisher (docs/relay.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from searchsync.config._reader import _Section, integer, number, setting, text

_TABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


@dataclass(frozen=True, slots=True)
class RelaySettings:
    """How `searchsync relay` claims, publishes and retries outbox rows.

    `enabled`: the relay, not Debezium, publishes (``outbox prune`` then deletes only PUBLISHED
    rows); `claim_timeout_s`: the ``locked_at`` age after which a claim is taken back;
    `max_attempts`: failures before a row is DEAD; `metrics_port` 0: no metrics.
    """

    enabled: bool = setting(False, _Section.boolean)
    table: str = setting("search_outbox", text(_TABLE, "a table name like 'search_outbox'"))
    batch_size: int = setting(100, integer(1, 10_000))
    poll_interval_s: float = setting(0.2, number(0.0, 60.0, lo_open=True))
    claim_timeout_s: float = setting(
        60.0, number(0.0, 86_400.0, lo_open=True), above="publish_timeout_s", strict=True
    )
    max_attempts: int = setting(10, integer(1, 1_000))
    publish_timeout_s: float = setting(30.0, number(0.0, 3_600.0, lo_open=True))
    topic_template: str = setting("outbox.event.{type}", _Section.topic_template)
    stats_interval_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))
    metrics_port: int = setting(0, integer(0, 65_535))
