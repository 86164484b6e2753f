"""The background workers' sections: ``[relay]`` (`searchsync relay`, the outbox's polling
publisher, docs/relay.md), ``[fanout]`` (docs/design.md, "Fan-out"), ``[exporter]`` (`searchsync
exporter`) and ``[canary]``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from searchsync.config._reader import _HOST, _Section, integer, number, setting, text

_TABLE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_CANARY_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _optional_id(r: _Section, key: str) -> str:
    """A heartbeat id, or "" (unset: the group id)."""
    if r._raw(key)[0] == "":
        return ""
    return r.string(key, _CANARY_ID, "1..64 of [A-Za-z0-9._-], or empty for the group id")


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


@dataclass(frozen=True, slots=True)
class FanoutSettings:
    """How each member's fan-out worker turns jobs into REBUILD events. `enabled`: run the worker
    (jobs are recorded either way); `appends_per_s`: the member's ceiling; `yield_above_s`: the
    worker waits while the member's oldest unfinished event is older than this (live writes
    first; 0: never waits); `lease_s`: how long a job stays with a worker that stopped renewing
    it."""

    enabled: bool = setting(True, _Section.boolean)
    appends_per_s: float = setting(2_000.0, number(0.0, 1_000_000.0, lo_open=True))
    yield_above_s: float = setting(5.0, number(0.0, 3_600.0))
    page_size: int = setting(500, integer(1, 10_000))
    poll_interval_s: float = setting(1.0, number(0.0, 60.0, lo_open=True))
    lease_s: float = setting(60.0, number(1.0, 86_400.0), above="poll_interval_s", strict=True)
    progress_every: int = setting(1_000, integer(1, 100_000_000))


@dataclass(frozen=True, slots=True)
class ExporterSettings:
    """`searchsync exporter` (docs/design.md, "Watching the group from outside"): the group's
    state every `interval_s`; `expected_members`: the member count the deployment runs."""

    interval_s: float = setting(15.0, number(0.0, 3_600.0, lo_open=True))
    expected_members: int = setting(1, integer(0, 10_000))
    metrics_host: str = setting("127.0.0.1", text(_HOST, "a host name or IP address"))
    metrics_port: int = setting(9470, integer(0, 65_535))
    peek_timeout_s: float = setting(5.0, number(0.0, 300.0, lo_open=True))


@dataclass(frozen=True, slots=True)
class CanarySettings:
    """The freshness canary: a heartbeat through the outbox every `interval_s` (0: off). `id` is
    the deployment's own heartbeat row; empty: the group id (its first 64 characters), so two
    deployments that share a database never overwrite each other's heartbeat."""

    interval_s: float = setting(0.0, number(0.0, 86_400.0))
    poll_s: float = setting(1.0, number(0.0, 3_600.0, lo_open=True))
    id: str = setting("", _optional_id)
