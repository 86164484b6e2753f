"""The operator commands' sections: rebuild, repair, retention, Kafka Connect and ``[load]``
(`searchsync index load`, whose chunks follow the rebuild's backfill: ``[rebuild] chunk_*``); and
the background workers': ``[relay]`` (`searchsync relay`, the outbox's polling publisher,
docs/relay.md), ``[fanout]`` (docs/design.md, "Fan-out"), ``[exporter]`` (`searchsync exporter`)
and ``[canary]``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from searchsync.config._reader import (
    _HOST,
    _TOPIC,
    _is_http_url,
    _Section,
    integer,
    number,
    setting,
    text,
)
from searchsync.config._secrets import scrub_credentials
from searchsync.duration import DURATION_FORM, format_duration, parse_duration
from searchsync.errors import ConfigError
from searchsync.naming import IDENTIFIER

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")
_DAY = timedelta(days=1)
_CANARY_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")


def _duration(r: _Section, key: str) -> timedelta | None:
    """A duration above zero; None only for `min_tombstone_age` (the sum applies)."""
    value, _ = r._raw(key)
    if value is None and key == "min_tombstone_age":
        return None
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise ConfigError(r.key(key), DURATION_FORM, value)
    try:
        parsed = parse_duration(value)
    except ValueError:
        raise ConfigError(r.key(key), DURATION_FORM, value) from None
    if parsed <= timedelta(0):
        raise ConfigError(r.key(key), f"{DURATION_FORM}, above zero", value)
    return parsed


def _url(r: _Section, key: str) -> str:
    """An http(s)://host[:port] URL without credentials or a trailing '/'."""
    url = r.string(key, form="an http(s)://host[:port] URL")
    if not _is_http_url(url):
        form = "an http(s)://host[:port] URL (no user:password)"
        raise ConfigError(r.key(key), form, scrub_credentials(url))
    return url.rstrip("/")


@dataclass(frozen=True, slots=True)
class RebuildSettings:
    """`searchsync rebuild` (docs/design.md, Rebuild): chunking, catch-up, verification limits.
    `queries` (empty: `query_count` sampled titles) are compared on `query_field` in both indices;
    `metrics_port` 0 serves no metrics."""

    chunk_initial: int = setting(500, integer(1, 1_000_000))
    chunk_min: int = setting(50, integer(1, 1_000_000))
    chunk_max: int = setting(5_000, integer(1, 1_000_000), above="chunk_min")
    chunk_target_s: float = setting(0.5, number(0.0, 600.0, lo_open=True))
    chunk_max_step: float = setting(2.0, number(1.0, 100.0, lo_open=True))
    topic_template: str = setting("outbox.event.{type}", _Section.topic_template)
    sample_size: int = setting(200, integer(0, 100_000))
    queries: tuple[str, ...] = setting(
        (), lambda r, key: r.string_list(key, bool, "query texts", allow_empty=True)
    )
    query_field: str = setting("title", text(_FIELD, "a field name like 'title'"))
    query_count: int = setting(20, integer(0, 10_000))
    top_k: int = setting(10, integer(1, 1_000))
    max_count_difference: int = setting(0, integer(0, 10**12))
    max_sample_mismatches: int = setting(0, integer(0, 100_000))
    max_query_diff_rate: float = setting(0.1, number(0.0, 1.0))
    max_failed_rows: int = setting(0, integer(0, 10**12))
    verify_attempts: int = setting(3, integer(1, 100))
    catchup_timeout_s: float = setting(600.0, number(0.0, 86_400.0, lo_open=True))
    live_wait_timeout_s: float = setting(3_600.0, number(0.0, 7 * 86_400.0, lo_open=True))
    poll_interval_s: float = setting(0.5, number(0.0, 60.0, lo_open=True))
    progress_interval_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))
    metrics_port: int = setting(0, integer(0, 65_535))


@dataclass(frozen=True, slots=True)
class RepairSettings:
    """The repair wheel (docs/design.md, "Repair"); a new `bucket_count` starts a new epoch.

    `settle_s`: the wait before a finding is re-checked; `content_share`: buckets content-hashed per
    rotation; `*_per_s`: ceilings (0: none); `max_live_lag`: the live lag above which it waits (at
    most `lag_wait_timeout_s`, then stops; 0: no guard); `metrics_port` 0: no metrics; `lease_s`:
    how long a repair's lease of its types lasts unless renewed (renewed every third of it).
    """

    bucket_count: int = setting(64, integer(1, 1 << 20))
    settle_s: float = setting(10.0, number(0.0, 86_400.0))
    content_share: float = setting(0.1, number(0.0, 1.0))
    slo_s: float = setting(3600.0, number(0.0, 1e9, lo_open=True))
    max_staleness_s: float = setting(14_400.0, number(0.0, 1e9, lo_open=True))
    gamma: float = setting(2.0, number(0.0, 10.0, lo_open=True))
    epsilon: float = setting(0.01, number(0.0, 1e6, lo_open=True))
    ewma_alpha: float = setting(0.3, number(0.0, 1.0, lo_open=True))
    page_size: int = setting(500, integer(1, 1_000_000))
    page_min: int = setting(50, integer(1, 1_000_000))
    page_max: int = setting(5_000, integer(1, 1_000_000), above="page_min")
    page_target_s: float = setting(0.2, number(0.0, 3_600.0, lo_open=True))
    appends_per_s: float = setting(50.0, number(0.0, 1e6, lo_open=True))
    mysql_sync_hash_column: bool = setting(False, _Section.boolean)
    daemon_buckets_per_tick: int = setting(4, integer(1, 1 << 20))
    daemon_interval_s: float = setting(60.0, number(0.0, 86_400.0))
    mysql_rows_per_s: float = setting(20_000.0, number(0.0, 1e9))
    es_requests_per_s: float = setting(50.0, number(0.0, 1e6))
    max_live_lag: int = setting(10_000, integer(0, 10**12))
    lag_wait_timeout_s: float = setting(600.0, number(0.0, 7 * 86_400.0))
    lag_poll_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))
    append_batch: int = setting(100, integer(1, 1_000_000))
    metrics_port: int = setting(0, integer(0, 65_535))
    lease_s: float = setting(60.0, number(1.0, 86_400.0))


def _rebuild(r: _Section, s: RebuildSettings) -> None:
    if not s.chunk_min <= s.chunk_initial <= s.chunk_max:
        raise ConfigError(
            r.key("chunk_initial"), f"between {s.chunk_min} and {s.chunk_max}", s.chunk_initial
        )


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """How long tombstones and outbox rows must be kept (docs/design.md, "Tombstones and their
    purge", "Outbox pruning"); durations like ``7d``, ``36h``.

    The shortest purge window is ``max_event_delay + retry_window + dlq_replay_window + margin``
    (7d): a younger tombstone may still meet an older event, retry or replayed dead letter, which
    must find its version to be refused. `min_tombstone_age` replaces the sum. `min_outbox_age` is
    the shortest ``outbox prune --older-than``.
    """

    max_event_delay: timedelta = setting(_DAY, _duration)
    retry_window: timedelta = setting(_DAY, _duration)
    dlq_replay_window: timedelta = setting(4 * _DAY, _duration)
    margin: timedelta = setting(_DAY, _duration)
    min_tombstone_age: timedelta | None = setting(None, _duration)
    purge_batch_size: int = setting(500, integer(1, 10_000))
    min_outbox_age: timedelta = setting(_DAY, _duration)
    prune_batch_size: int = setting(500, integer(1, 100_000))
    prune_pause_s: float = setting(0.1, number(0.0, 60.0))

    @property
    def tombstone_minimum(self) -> timedelta:
        """The shortest purge window: `min_tombstone_age` if set, else the sum."""
        if self.min_tombstone_age is not None:
            return self.min_tombstone_age
        return self.max_event_delay + self.retry_window + self.dlq_replay_window + self.margin

    def tombstone_formula(self) -> str:
        """How `tombstone_minimum` was reached, for messages."""
        if self.min_tombstone_age is not None:
            return f"retention.min_tombstone_age = {format_duration(self.min_tombstone_age)}"
        parts = (self.max_event_delay, self.retry_window, self.dlq_replay_window, self.margin)
        return (
            "max_event_delay + retry_window + dlq_replay_window + margin = "
            + " + ".join(format_duration(p) for p in parts)
            + f" = {format_duration(self.tombstone_minimum)}"
        )


@dataclass(frozen=True, slots=True)
class ConnectSettings:
    """Where Kafka Connect answers and which connector publishes the outbox."""

    url: str = setting("http://127.0.0.1:8083", _url)
    # one URL path segment
    connector: str = setting(
        "searchsync-outbox", text(_TOPIC, "a connector name of [A-Za-z0-9._-], not '.' or '..'")
    )
    request_timeout_s: float = setting(10.0, number(0.0, 300.0, lo_open=True))
    # `searchsync run` restarts the connector's FAILED tasks every `watch_interval_s`
    restart_failed_tasks: bool = setting(False, _Section.boolean)
    watch_interval_s: float = setting(30.0, number(0.0, 3_600.0, lo_open=True))


@dataclass(frozen=True, slots=True)
class LoadSettings:
    """`max_live_lag`: the live group's lag above which the load waits before its next chunk (at
    most `lag_wait_timeout_s`, then it stops, resumable; 0: no guard), polling every `lag_poll_s`;
    `live_wait_timeout_s`: how long a part, once scanned, waits for the live group to pass its
    watermark; `progress_interval_s`: a progress line this often when stderr is no terminal."""

    max_live_lag: int = setting(10_000, integer(0, 10**12))
    lag_wait_timeout_s: float = setting(600.0, number(0.0, 7 * 86_400.0))
    lag_poll_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))
    live_wait_timeout_s: float = setting(600.0, number(0.0, 7 * 86_400.0, lo_open=True))
    poll_interval_s: float = setting(0.5, number(0.0, 60.0, lo_open=True))
    progress_interval_s: float = setting(5.0, number(0.0, 3_600.0, lo_open=True))


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
    table: str = setting("search_outbox", text(IDENTIFIER, "a table name like 'search_outbox'"))
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
