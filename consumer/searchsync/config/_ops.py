"""The operator commands' sections: rebuild, repair, retention and Kafka Connect."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from searchsync.config._reader import (
    _is_http_url,
    _Section,
)
from searchsync.config._secrets import scrub_credentials
from searchsync.duration import DURATION_FORM, format_duration, parse_duration
from searchsync.errors import ConfigError

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")
_CONNECTOR = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True, slots=True)
class RebuildSettings:
    """`searchsync rebuild` (docs/design.md, Rebuild): chunking, catch-up, verification limits.
    `queries` (empty: `query_count` sampled titles) are compared on `query_field` in both indices;
    `metrics_port` 0 serves no metrics."""

    chunk_initial: int = 500
    chunk_min: int = 50
    chunk_max: int = 5_000
    chunk_target_s: float = 0.5
    chunk_max_step: float = 2.0
    topic_template: str = "outbox.event.{type}"
    sample_size: int = 200
    queries: tuple[str, ...] = ()
    query_field: str = "title"
    query_count: int = 20
    top_k: int = 10
    max_count_difference: int = 0
    max_sample_mismatches: int = 0
    max_query_diff_rate: float = 0.1
    max_failed_rows: int = 0
    verify_attempts: int = 3
    catchup_timeout_s: float = 600.0
    live_wait_timeout_s: float = 3_600.0
    poll_interval_s: float = 0.5
    progress_interval_s: float = 5.0
    metrics_port: int = 0


@dataclass(frozen=True, slots=True)
class RepairSettings:
    """The repair wheel (docs/design.md, "Repair"); a new `bucket_count` starts a new epoch.

    `settle_s`: the wait before a finding is re-checked; `content_share`: buckets content-hashed per
    rotation; `*_per_s`: ceilings (0: none); `max_live_lag`: the live lag above which it waits (at
    most `lag_wait_timeout_s`, then stops; 0: no guard); `metrics_port` 0: no metrics.
    """

    bucket_count: int = 64
    settle_s: float = 10.0
    content_share: float = 0.1
    slo_s: float = 3600.0
    max_staleness_s: float = 14_400.0
    gamma: float = 2.0
    epsilon: float = 0.01
    ewma_alpha: float = 0.3
    page_size: int = 500
    page_min: int = 50
    page_max: int = 5_000
    page_target_s: float = 0.2
    appends_per_s: float = 50.0
    mysql_sync_hash_column: bool = False
    daemon_buckets_per_tick: int = 4
    daemon_interval_s: float = 60.0
    mysql_rows_per_s: float = 20_000.0
    es_requests_per_s: float = 50.0
    max_live_lag: int = 10_000
    lag_wait_timeout_s: float = 600.0
    lag_poll_s: float = 5.0
    append_batch: int = 100
    metrics_port: int = 0


def _rebuild(r: _Section) -> RebuildSettings:
    lo = r.integer("chunk_min", 1, 1_000_000)
    hi = r.integer("chunk_max", 1, 1_000_000)
    r.ordered("chunk_min", lo, "chunk_max", hi)
    initial = r.integer("chunk_initial", 1, 1_000_000)
    if not lo <= initial <= hi:
        raise ConfigError(r.key("chunk_initial"), f"between {lo} and {hi}", initial)
    template = r.topic_template("topic_template")
    return RebuildSettings(
        chunk_initial=initial,
        chunk_min=lo,
        chunk_max=hi,
        chunk_target_s=r.number("chunk_target_s", 0.0, 600.0, lo_open=True),
        chunk_max_step=r.number("chunk_max_step", 1.0, 100.0, lo_open=True),
        topic_template=template,
        sample_size=r.integer("sample_size", 0, 100_000),
        queries=r.string_list("queries", lambda q: bool(q), "query texts", allow_empty=True),
        query_field=r.string("query_field", _FIELD, "a field name like 'title'"),
        query_count=r.integer("query_count", 0, 10_000),
        top_k=r.integer("top_k", 1, 1_000),
        max_count_difference=r.integer("max_count_difference", 0, 10**12),
        max_sample_mismatches=r.integer("max_sample_mismatches", 0, 100_000),
        max_query_diff_rate=r.number("max_query_diff_rate", 0.0, 1.0),
        max_failed_rows=r.integer("max_failed_rows", 0, 10**12),
        verify_attempts=r.integer("verify_attempts", 1, 100),
        catchup_timeout_s=r.number("catchup_timeout_s", 0.0, 86_400.0, lo_open=True),
        live_wait_timeout_s=r.number("live_wait_timeout_s", 0.0, 7 * 86_400.0, lo_open=True),
        poll_interval_s=r.number("poll_interval_s", 0.0, 60.0, lo_open=True),
        progress_interval_s=r.number("progress_interval_s", 0.0, 3_600.0, lo_open=True),
        metrics_port=r.integer("metrics_port", 0, 65_535),
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

    max_event_delay: timedelta = timedelta(days=1)
    retry_window: timedelta = timedelta(days=1)
    dlq_replay_window: timedelta = timedelta(days=4)
    margin: timedelta = timedelta(days=1)
    min_tombstone_age: timedelta | None = None
    purge_batch_size: int = 500
    min_outbox_age: timedelta = timedelta(days=1)
    prune_batch_size: int = 500
    prune_pause_s: float = 0.1

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


def _retention(r: _Section) -> RetentionSettings:
    return RetentionSettings(
        max_event_delay=_required_duration(r, "max_event_delay"),
        retry_window=_required_duration(r, "retry_window"),
        dlq_replay_window=_required_duration(r, "dlq_replay_window"),
        margin=_required_duration(r, "margin"),
        min_tombstone_age=_duration(r, "min_tombstone_age", optional=True),
        purge_batch_size=r.integer("purge_batch_size", 1, 10_000),
        min_outbox_age=_required_duration(r, "min_outbox_age"),
        prune_batch_size=r.integer("prune_batch_size", 1, 100_000),
        prune_pause_s=r.number("prune_pause_s", 0.0, 60.0),
    )


@dataclass(frozen=True, slots=True)
class ConnectSettings:
    """Where Kafka Connect answers and which connector publishes the outbox."""

    url: str = "http://127.0.0.1:8083"
    connector: str = "searchsync-outbox"
    request_timeout_s: float = 10.0
    # `searchsync run` restarts the connector's FAILED tasks every `watch_interval_s`
    restart_failed_tasks: bool = False
    watch_interval_s: float = 30.0


def _connect(r: _Section) -> ConnectSettings:
    url = r.string("url", form="an http(s)://host[:port] URL")
    if not _is_http_url(url):
        raise ConfigError(
            r.key("url"), "an http(s)://host[:port] URL (no user:password)", scrub_credentials(url)
        )
    return ConnectSettings(
        url=url.rstrip("/"),
        connector=_connector(r),
        request_timeout_s=r.number("request_timeout_s", 0.0, 300.0, lo_open=True),
        restart_failed_tasks=r.boolean("restart_failed_tasks"),
        watch_interval_s=r.number("watch_interval_s", 0.0, 3_600.0, lo_open=True),
    )


def _connector(r: _Section) -> str:
    """A connector name that is one URL path segment: [A-Za-z0-9._-], not '.' or '..'."""
    form = "a connector name of [A-Za-z0-9._-], not '.' or '..'"
    name = r.string("connector", _CONNECTOR, form)
    if name in (".", ".."):
        raise ConfigError(r.key("connector"), form, name)
    return name


def _repair(r: _Section) -> RepairSettings:
    page_min = r.integer("page_min", 1, 1_000_000)
    page_max = r.integer("page_max", 1, 1_000_000)
    r.ordered("page_min", page_min, "page_max", page_max)
    return RepairSettings(
        bucket_count=r.integer("bucket_count", 1, 1 << 20),
        settle_s=r.number("settle_s", 0.0, 86_400.0),
        content_share=r.number("content_share", 0.0, 1.0),
        slo_s=r.number("slo_s", 0.0, 1e9, lo_open=True),
        max_staleness_s=r.number("max_staleness_s", 0.0, 1e9, lo_open=True),
        gamma=r.number("gamma", 0.0, 10.0, lo_open=True),
        epsilon=r.number("epsilon", 0.0, 1e6, lo_open=True),
        ewma_alpha=r.number("ewma_alpha", 0.0, 1.0, lo_open=True),
        page_size=r.integer("page_size", 1, 1_000_000),
        page_min=page_min,
        page_max=page_max,
        page_target_s=r.number("page_target_s", 0.0, 3_600.0, lo_open=True),
        appends_per_s=r.number("appends_per_s", 0.0, 1e6, lo_open=True),
        mysql_sync_hash_column=r.boolean("mysql_sync_hash_column"),
        daemon_buckets_per_tick=r.integer("daemon_buckets_per_tick", 1, 1 << 20),
        daemon_interval_s=r.number("daemon_interval_s", 0.0, 86_400.0),
        mysql_rows_per_s=r.number("mysql_rows_per_s", 0.0, 1e9),
        es_requests_per_s=r.number("es_requests_per_s", 0.0, 1e6),
        max_live_lag=r.integer("max_live_lag", 0, 10**12),
        lag_wait_timeout_s=r.number("lag_wait_timeout_s", 0.0, 7 * 86_400.0),
        lag_poll_s=r.number("lag_poll_s", 0.0, 3_600.0, lo_open=True),
        append_batch=r.integer("append_batch", 1, 1_000_000),
        metrics_port=r.integer("metrics_port", 0, 65_535),
    )


def _duration(r: _Section, key: str, *, optional: bool = False) -> timedelta | None:
    value, _ = r._raw(key)
    if value is None and optional:
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


def _required_duration(r: _Section, key: str) -> timedelta:
    value = _duration(r, key)
    assert value is not None  # only optional keys give None
    return value
