"""The consumer's own sections: Kafka, MySQL, Elasticsearch, the pipeline, observability and
the projector modules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from consumer.config._reader import (
    _DATABASE,
    _GROUP,
    _HOST,
    _INDEX_PREFIX,
    _LOG_LEVELS,
    _PROJECTION_ENTRY,
    _TOPIC,
    PROJECTION_ENTRY_FORM,
    LibrdkafkaValue,
    Secret,
    _empty_mapping,
    _is_host_port,
    _is_http_url,
    _is_topic,
    _Section,
)
from consumer.errors import ConfigError


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """Where to read events and where dead letters go.

    Exactly one of `topics` and `topic_regex` is used: setting `topic_regex` empties `topics`.
    `dlq_topic` defaults to ``<group_id>.dlq`` when loaded.
    """

    bootstrap_servers: str = "127.0.0.1:9092"
    group_id: str = "searchsync"
    topics: tuple[str, ...] = ("outbox.event.wiki_page",)
    topic_regex: str | None = None
    dlq_topic: str = "searchsync.dlq"
    session_timeout_ms: int = 45_000
    max_poll_interval_ms: int = 300_000
    poll_timeout_s: float = 0.1
    poll_batch_size: int = 500
    auto_offset_reset: str = "earliest"
    extra: Mapping[str, LibrdkafkaValue] = field(default_factory=_empty_mapping)

    @property
    def subscription(self) -> list[str]:
        """What to pass to ``Consumer.subscribe``: librdkafka treats a leading ``^`` as a regex."""
        return [self.topic_regex] if self.topic_regex is not None else list(self.topics)

    def client_config(self) -> dict[str, LibrdkafkaValue]:
        """Settings common to every client: the bootstrap servers plus `extra`."""
        return {**self.extra, "bootstrap.servers": self.bootstrap_servers}


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


@dataclass(frozen=True, slots=True)
class ElasticsearchSettings:
    """The search index. Writes go to the alias ``<index_prefix>_<aggregate_type>``."""

    hosts: tuple[str, ...] = ("http://127.0.0.1:9200",)
    index_prefix: str = "searchsync"
    request_timeout_s: float = 30.0
    bulk_max_actions: int = 500
    bulk_max_bytes: int = 5 * 1024 * 1024


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
    """Metrics endpoint and logging. Port 0 asks the OS for a free port (tests)."""

    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464
    log_level: str = "INFO"


@dataclass(frozen=True, slots=True)
class ProjectionSettings:
    """Where the projectors come from: one entry per module or object, in `PROJECTION_ENTRY_FORM`.

    The list is the whole set (name ``consumer.projection.wiki_page`` too if you want wiki_page
    next to your own types); `consumer.projection.registry_from_settings` imports it. The plug-in
    contract is in docs/consumer.md, "Adding an aggregate type".
    """

    modules: tuple[str, ...] = ("consumer.projection.wiki_page",)


def _kafka(r: _Section) -> KafkaSettings:
    servers = r.string(
        "bootstrap_servers", form="comma-separated host:port pairs, e.g. '127.0.0.1:9092'"
    )
    if not all(_is_host_port(item.strip()) for item in servers.split(",")):
        raise ConfigError(r.key("bootstrap_servers"), "comma-separated host:port pairs", servers)
    group_id = r.string("group_id", _GROUP, "1..200 of [A-Za-z0-9._-]")
    topic_regex = r.optional_string("topic_regex")
    if topic_regex is not None:
        if r.given("topics"):
            raise ConfigError(r.key("topics"), "topics or topic_regex, not both", "both")
        if not topic_regex.startswith("^"):
            raise ConfigError(r.key("topic_regex"), "a regex starting with '^'", topic_regex)
        try:
            re.compile(topic_regex)
        except re.error as exc:
            raise ConfigError(r.key("topic_regex"), f"a valid regex ({exc})", topic_regex) from None
        topics: tuple[str, ...] = ()
    else:
        topics = r.string_list("topics", _is_topic, "Kafka topic names")
    dlq_topic = (
        r.string("dlq_topic", _TOPIC, "a Kafka topic name")
        if r.given("dlq_topic")
        else f"{group_id}.dlq"
    )
    if dlq_topic in topics or (topic_regex is not None and re.match(topic_regex, dlq_topic)):
        raise ConfigError(
            r.key("dlq_topic"), "a topic the consumer does not read itself", dlq_topic
        )
    session = r.integer("session_timeout_ms", 1_000, 3_600_000)
    max_poll = r.integer("max_poll_interval_ms", 1_000, 86_400_000)
    if max_poll < session:
        raise ConfigError(
            r.key("max_poll_interval_ms"), f">= kafka.session_timeout_ms ({session})", max_poll
        )
    return KafkaSettings(
        bootstrap_servers=",".join(item.strip() for item in servers.split(",")),
        group_id=group_id,
        topics=topics,
        topic_regex=topic_regex,
        dlq_topic=dlq_topic,
        session_timeout_ms=session,
        max_poll_interval_ms=max_poll,
        poll_timeout_s=r.number("poll_timeout_s", 0.0, 60.0, lo_open=True),
        poll_batch_size=r.integer("poll_batch_size", 1, 100_000),
        auto_offset_reset=r.choice("auto_offset_reset", ("earliest", "latest")),
        extra=r.librdkafka("extra"),
    )


def _mysql(r: _Section) -> MysqlSettings:
    pool_min = r.integer("pool_min", 0, 1_000)
    pool_max = r.integer("pool_max", 1, 1_000)
    if pool_max < pool_min:
        raise ConfigError(r.key("pool_max"), f">= mysql.pool_min ({pool_min})", pool_max)
    return MysqlSettings(
        host=r.string("host", _HOST, "a host name or IP address"),
        port=r.integer("port", 1, 65_535),
        user=r.string("user"),
        password=r.secret("password"),
        database=r.string("database", _DATABASE, "1..64 of [A-Za-z0-9_$]"),
        pool_min=pool_min,
        pool_max=pool_max,
        connect_timeout_s=r.number("connect_timeout_s", 0.0, 300.0, lo_open=True),
    )


def _elasticsearch(r: _Section) -> ElasticsearchSettings:
    return ElasticsearchSettings(
        hosts=r.string_list("hosts", _is_http_url, "http(s)://host[:port] URLs"),
        index_prefix=r.string(
            "index_prefix", _INDEX_PREFIX, "lower-case [a-z0-9_-], 1..100 characters"
        ),
        request_timeout_s=r.number("request_timeout_s", 0.0, 3_600.0, lo_open=True),
        bulk_max_actions=r.integer("bulk_max_actions", 1, 100_000),
        bulk_max_bytes=r.integer("bulk_max_bytes", 1_024, 1024 * 1024 * 1024),
    )


def _pipeline(r: _Section) -> PipelineSettings:
    base = r.number("retry_base_delay_s", 0.0, 86_400.0, lo_open=True)
    ceiling = r.number("retry_max_delay_s", 0.0, 86_400.0, lo_open=True)
    if ceiling < base:
        raise ConfigError(
            r.key("retry_max_delay_s"), f">= pipeline.retry_base_delay_s ({base})", ceiling
        )
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
    )


def _projection(r: _Section) -> ProjectionSettings:
    modules = r.string_list(
        "modules", lambda item: bool(_PROJECTION_ENTRY.fullmatch(item)), PROJECTION_ENTRY_FORM
    )
    repeated = sorted({m for m in modules if modules.count(m) > 1})
    if repeated:
        raise ConfigError(r.key("modules"), "each entry once", repeated[0])
    return ProjectionSettings(modules=modules)
