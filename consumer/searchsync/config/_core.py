"""The consumer's sections besides [kafka]: MySQL, Elasticsearch, the pipeline, observability and
the projector modules."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from searchsync import naming
from searchsync.config._reader import (
    _HOST,
    _is_http_url,
    _Section,
    integer,
    number,
    one_of,
    setting,
    text,
)
from searchsync.config._secrets import MASK, Secret
from searchsync.errors import ConfigError
from searchsync.time_zones import TIME_ZONE_FORM, parse_time_zone

_HOST_FORM: Final = "a host name or IP address"
_DATABASE = re.compile(r"[A-Za-z0-9_$]{1,64}")
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_PROJECTION_ENTRY = re.compile(rf"{_DOTTED}(?::{_DOTTED})?")
PROJECTION_ENTRY_FORM: Final = (
    "importable names: 'pkg.module' (a module with projectors() returning Projectors) or"
    " 'pkg.module:name' (a Projector, or a callable returning one Projector or several)"
)


_MYSQL_SSL_MODES: Final = ("disabled", "verify_ca", "verify_identity")
_VERIFIED: Final = ("ssl_mode", ("verify_ca", "verify_identity"), "verify_ca or verify_identity")
MYSQL_FLAVORS: Final = ("auto", "mysql", "mariadb")
"""``[mysql] flavor``: the server family, ``auto`` detected when the pool connects
(`searchsync.mysql.dialect`)."""


def _time_zone(r: _Section, key: str) -> str:
    value = r.string(key, None, TIME_ZONE_FORM)
    try:
        parse_time_zone(value)
    except ValueError:
        raise ConfigError(r.key(key), TIME_ZONE_FORM, value) from None
    return value.strip()


@dataclass(frozen=True, slots=True)
class MysqlSettings:
    """The source of truth. Defaults match the local stack."""

    host: str = setting("127.0.0.1", text(_HOST, _HOST_FORM))
    port: int = setting(3306, integer(1, 65_535))
    user: str = setting("searchsync", text())
    password: Secret = setting(Secret("searchsync"), _Section.secret)
    database: str = setting("searchsync", text(_DATABASE, "1..64 of [A-Za-z0-9_$]"))
    pool_min: int = setting(1, integer(0, 1_000))
    pool_max: int = setting(10, integer(1, 1_000), above="pool_min")
    connect_timeout_s: float = setting(5.0, number(0.0, 300.0, lo_open=True))
    flavor: str = setting("auto", one_of(MYSQL_FLAVORS, lower=True))
    # disabled | verify_ca | verify_identity (docs/security.md)
    ssl_mode: str = setting("disabled", one_of(_MYSQL_SSL_MODES, lower=True))
    ssl_ca: str | None = setting(None, _Section.optional_file, only=_VERIFIED)
    ssl_cert: str | None = setting(None, _Section.optional_file, only=_VERIFIED)
    ssl_key: str | None = setting(None, _Section.optional_file, only=_VERIFIED)
    # how a naive DATETIME value is read: 'UTC', '+05:30', 'Europe/Berlin' (docs/consumer.md)
    time_zone: str = setting("UTC", _time_zone)


@dataclass(frozen=True, slots=True)
class ElasticsearchSettings:
    """The search index. Writes go to the alias ``<index_prefix>_<aggregate_type>``."""

    hosts: tuple[str, ...] = setting(
        ("http://127.0.0.1:9200",),
        lambda r, key: r.string_list(key, _is_http_url, "http(s)://host[:port] URLs"),
    )
    index_prefix: str = setting(
        "searchsync", text(naming.INDEX_PREFIX, "lower-case [a-z0-9_-], 1..100 characters")
    )
    request_timeout_s: float = setting(30.0, number(0.0, 3_600.0, lo_open=True))
    bulk_max_actions: int = setting(500, integer(1, 100_000))
    bulk_max_bytes: int = setting(5 * 1024 * 1024, integer(1_024, 1024 * 1024 * 1024))
    ca_certs: str | None = setting(None, _Section.optional_file)
    verify_certs: bool = setting(True, _Section.boolean)
    api_key: Secret | None = setting(None, _Section.optional_secret)
    username: str | None = setting(None, _Section.optional_string)
    password: Secret | None = setting(None, _Section.optional_secret)


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """Which engine serves the index (both take the [elasticsearch] section's settings)."""

    engine: str = setting("elasticsearch", one_of(("elasticsearch", "opensearch"), lower=True))


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """Bounds and timings of the consumer pipeline (retry defaults: docs/design.md, Retry)."""

    max_in_flight_keys: int = setting(1_000, integer(1, 1_000_000))
    max_queued_events: int = setting(10_000, integer(1, 10_000_000))
    max_event_bytes: int = setting(256 * 1024, integer(64, 64 * 1024 * 1024))
    retry_base_delay_s: float = setting(1.0, number(0.0, 86_400.0, lo_open=True))
    retry_max_delay_s: float = setting(
        1_800.0, number(0.0, 86_400.0, lo_open=True), above="retry_base_delay_s"
    )
    retry_max_attempts: int = setting(10, integer(1, 1_000))
    retry_jitter: float = setting(0.2, number(0.0, 1.0))
    dlq_max_ratio: float = setting(0.5, number(0.0, 1.0, lo_open=True))
    dlq_window: int = setting(200, integer(1, 1_000_000))
    dlq_max_consecutive: int = setting(100, integer(1, 1_000_000))
    commit_interval_s: float = setting(1.0, number(0.0, 3_600.0, lo_open=True))
    shutdown_deadline_s: float = setting(30.0, number(0.0, 3_600.0, lo_open=True))
    lag_poll_interval_s: float = setting(15.0, number(0.0, 3_600.0, lo_open=True))
    # re-check the schema fence (docs/design.md)
    fence_check_interval_s: float = setting(2.0, number(0.0, 3_600.0, lo_open=True))


@dataclass(frozen=True, slots=True)
class ObservabilitySettings:
    """Metrics endpoint (port 0: any free port) and logging. `severe_lag_s` is exported as
    ``searchsync_severe_lag_threshold_seconds`` for the ``SearchsyncSevereLag`` alert."""

    metrics_host: str = setting("127.0.0.1", text(_HOST, _HOST_FORM))
    metrics_port: int = setting(9464, integer(0, 65_535))
    log_level: str = setting("INFO", one_of(_LOG_LEVELS, upper=True))
    severe_lag_s: float = setting(300.0, number(0.0, 86_400.0 * 7, lo_open=True))


def _modules(r: _Section, key: str) -> tuple[str, ...]:
    modules = r.string_list(key, _PROJECTION_ENTRY.fullmatch, PROJECTION_ENTRY_FORM)
    repeated = sorted({m for m in modules if modules.count(m) > 1})
    if repeated:
        raise ConfigError(r.key(key), "each entry once", repeated[0])
    return modules


@dataclass(frozen=True, slots=True)
class ProjectionSettings:
    """Where the projectors come from: the whole set, one entry each in `PROJECTION_ENTRY_FORM`
    (docs/consumer.md, "Adding an aggregate type")."""

    modules: tuple[str, ...] = setting(("searchsync.projection.wiki_page",), _modules)


def _mysql(r: _Section, mysql: MysqlSettings) -> None:
    if (mysql.ssl_cert is None) != (mysql.ssl_key is None):
        raise ConfigError(r.key("ssl_key"), "both or neither of ssl_cert and ssl_key", None)


def _elasticsearch(r: _Section, es: ElasticsearchSettings) -> None:
    if es.api_key is not None and (es.username is not None or es.password is not None):
        raise ConfigError(r.key("api_key"), "api_key or username/password, not both", MASK)
    if (es.username is None) != (es.password is None):
        raise ConfigError(r.key("password"), "both or neither of username and password", MASK)
