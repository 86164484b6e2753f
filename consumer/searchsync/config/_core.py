"""The consumer's sections besides [kafka]: MySQL, Elasticsearch, the pipeline, observability and
the projector modules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from searchsync.config._reader import (
    _DATABASE,
    _HOST,
    _INDEX_PREFIX,
    _LOG_LEVELS,
    _PROJECTION_ENTRY,
    PROJECTION_ENTRY_FORM,
    _is_http_url,
    _refuse_unless,
    _Section,
)
from searchsync.config._secrets import MASK, Secret
from searchsync.errors import ConfigError


@dataclass(frozen=True, slots=True)
class MysqlSettings:
    """The source of truth. Defaults match the local stack."""

    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "searchsync"
    password: Secret = field(default_factory=lambda: Secret("searchsync"))
    database: str = "searchsync"
    pool_min: int = 1
    pool_max: int = 10
    connect_timeout_s: float = 5.0
    ssl_mode: str = "disabled"  # disabled | verify_ca | verify_identity (docs/security.md)
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None


@dataclass(frozen=True, slots=True)
class ElasticsearchSettings:
    """The search index. Writes go to the alias ``<index_prefix>_<aggregate_type>``."""

    hosts: tuple[str, ...] = ("http://127.0.0.1:9200",)
    index_prefix: str = "searchsync"
    request_timeout_s: float = 30.0
    bulk_max_actions: int = 500
    bulk_max_bytes: int = 5 * 1024 * 1024
    ca_certs: str | None = None
    verify_certs: bool = True
    api_key: Secret | None = None
    username: str | None = None
    password: Secret | None = None


SEARCH_ENGINES: Final = ("elasticsearch", "opensearch")


@dataclass(frozen=True, slots=True)
class SearchSettings:
    """Which engine serves the index (both take the [elasticsearch] section's settings)."""

    engine: str = "elasticsearch"


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """Bounds and timings of the consumer pipeline (retry defaults: docs/design.md, Retry)."""

    max_in_flight_keys: int = 1_000
    max_queued_events: int = 10_000
    max_event_bytes: int = 256 * 1024
    retry_base_delay_s: float = 1.0
    retry_max_delay_s: float = 1_800.0
    retry_max_attempts: int = 10
    retry_jitter: float = 0.2
    dlq_max_ratio: float = 0.5
    dlq_window: int = 200
    dlq_max_consecutive: int = 100
    commit_interval_s: float = 1.0
    shutdown_deadline_s: float = 30.0
    lag_poll_interval_s: float = 15.0
    fence_check_interval_s: float = 2.0  # re-check the schema fence (docs/design.md)


@dataclass(frozen=True, slots=True)
class ObservabilitySettings:
    """Metrics endpoint (port 0: any free port) and logging. `severe_lag_s` is exported as
    ``searchsync_severe_lag_threshold_seconds`` for the ``SearchsyncSevereLag`` alert."""

    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464
    log_level: str = "INFO"
    severe_lag_s: float = 300.0


@dataclass(frozen=True, slots=True)
class ProjectionSettings:
    """Where the projectors come from: the whole set, one entry each in `PROJECTION_ENTRY_FORM`
    (docs/consumer.md, "Adding an aggregate type")."""

    modules: tuple[str, ...] = ("searchsync.projection.wiki_page",)


_MYSQL_SSL_MODES: Final = ("disabled", "verify_ca", "verify_identity")


def _mysql(r: _Section) -> MysqlSettings:
    ssl_mode = r.choice("ssl_mode", _MYSQL_SSL_MODES, lower=True)
    files = ("ssl_ca", "ssl_cert", "ssl_key")
    if ssl_mode == "disabled":
        _refuse_unless(r, files, "verify_ca or verify_identity", section="mysql.ssl_mode")
        ssl_ca = ssl_cert = ssl_key = None
    else:
        ssl_ca, ssl_cert, ssl_key = (r.optional_file(name) for name in files)
        if (ssl_cert is None) != (ssl_key is None):
            raise ConfigError(r.key("ssl_key"), "both or neither of ssl_cert and ssl_key", None)
    pool_min = r.integer("pool_min", 0, 1_000)
    pool_max = r.integer("pool_max", 1, 1_000)
    r.ordered("pool_min", pool_min, "pool_max", pool_max)
    return MysqlSettings(
        host=r.string("host", _HOST, "a host name or IP address"),
        port=r.integer("port", 1, 65_535),
        user=r.string("user"),
        password=r.secret("password"),
        database=r.string("database", _DATABASE, "1..64 of [A-Za-z0-9_$]"),
        pool_min=pool_min,
        pool_max=pool_max,
        connect_timeout_s=r.number("connect_timeout_s", 0.0, 300.0, lo_open=True),
        ssl_mode=ssl_mode,
        ssl_ca=ssl_ca,
        ssl_cert=ssl_cert,
        ssl_key=ssl_key,
    )


def _elasticsearch(r: _Section) -> ElasticsearchSettings:
    api_key = r.optional_secret("api_key")
    username = r.optional_string("username")
    password = r.optional_secret("password")
    if api_key is not None and (username is not None or password is not None):
        raise ConfigError(r.key("api_key"), "api_key or username/password, not both", MASK)
    if (username is None) != (password is None):
        raise ConfigError(r.key("password"), "both or neither of username and password", MASK)
    return ElasticsearchSettings(
        hosts=r.string_list("hosts", _is_http_url, "http(s)://host[:port] URLs"),
        index_prefix=r.string(
            "index_prefix", _INDEX_PREFIX, "lower-case [a-z0-9_-], 1..100 characters"
        ),
        request_timeout_s=r.number("request_timeout_s", 0.0, 3_600.0, lo_open=True),
        bulk_max_actions=r.integer("bulk_max_actions", 1, 100_000),
        bulk_max_bytes=r.integer("bulk_max_bytes", 1_024, 1024 * 1024 * 1024),
        ca_certs=r.optional_file("ca_certs"),
        verify_certs=r.boolean("verify_certs"),
        api_key=api_key,
        username=username,
        password=password,
    )


def _search(r: _Section) -> SearchSettings:
    return SearchSettings(engine=r.choice("engine", SEARCH_ENGINES, lower=True))


def _pipeline(r: _Section) -> PipelineSettings:
    base = r.number("retry_base_delay_s", 0.0, 86_400.0, lo_open=True)
    ceiling = r.number("retry_max_delay_s", 0.0, 86_400.0, lo_open=True)
    r.ordered("retry_base_delay_s", base, "retry_max_delay_s", ceiling)
    return PipelineSettings(
        max_in_flight_keys=r.integer("max_in_flight_keys", 1, 1_000_000),
        max_queued_events=r.integer("max_queued_events", 1, 10_000_000),
        max_event_bytes=r.integer("max_event_bytes", 64, 64 * 1024 * 1024),
        retry_base_delay_s=base,
        retry_max_delay_s=ceiling,
        retry_max_attempts=r.integer("retry_max_attempts", 1, 1_000),
        retry_jitter=r.number("retry_jitter", 0.0, 1.0),
        dlq_max_ratio=r.number("dlq_max_ratio", 0.0, 1.0, lo_open=True),
        dlq_window=r.integer("dlq_window", 1, 1_000_000),
        dlq_max_consecutive=r.integer("dlq_max_consecutive", 1, 1_000_000),
        commit_interval_s=r.number("commit_interval_s", 0.0, 3_600.0, lo_open=True),
        shutdown_deadline_s=r.number("shutdown_deadline_s", 0.0, 3_600.0, lo_open=True),
        lag_poll_interval_s=r.number("lag_poll_interval_s", 0.0, 3_600.0, lo_open=True),
        fence_check_interval_s=r.number("fence_check_interval_s", 0.0, 3_600.0, lo_open=True),
    )


def _observability(r: _Section) -> ObservabilitySettings:
    return ObservabilitySettings(
        metrics_host=r.string("metrics_host", _HOST, "a host name or IP address"),
        metrics_port=r.integer("metrics_port", 0, 65_535),
        log_level=r.choice("log_level", _LOG_LEVELS, upper=True),
        severe_lag_s=r.number("severe_lag_s", 0.0, 86_400.0 * 7, lo_open=True),
    )


def _projection(r: _Section) -> ProjectionSettings:
    modules = r.string_list(
        "modules", lambda item: bool(_PROJECTION_ENTRY.fullmatch(item)), PROJECTION_ENTRY_FORM
    )
    repeated = sorted({m for m in modules if modules.count(m) > 1})
    if repeated:
        raise ConfigError(r.key("modules"), "each entry once", repeated[0])
    return ProjectionSettings(modules=modules)
