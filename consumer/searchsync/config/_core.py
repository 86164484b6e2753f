"""The consumer's own sections: Kafka, MySQL, Elasticsearch, the pipeline, observability and
the projector modules."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from searchsync.config._reader import (
    _DATABASE,
    _GROUP,
    _HOST,
    _INDEX_PREFIX,
    _LOG_LEVELS,
    _PROJECTION_ENTRY,
    _TOPIC,
    PROJECTION_ENTRY_FORM,
    LibrdkafkaValue,
    _empty_mapping,
    _is_host_port,
    _is_http_url,
    _is_topic,
    _Section,
)
from searchsync.config._secrets import MASK, SENSITIVE_KEY, Secret
from searchsync.errors import ConfigError


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
    # How long the group waits for a silent member (kill -9, a lost host) before its partitions
    # move: the floor of recovery after a crash (bench/recovery_bench.py). Kafka's 45 s default
    # would miss the 30 s recovery target on its own; 10 s (Kafka's pre-3.0 default) is >= the
    # broker's group.min.session.timeout.ms (6 s) and 3 x librdkafka's 3 s heartbeat, which its
    # own thread sends, so a busy event loop does not delay it.
    session_timeout_ms: int = 10_000
    max_poll_interval_ms: int = 300_000
    poll_timeout_s: float = 0.1
    poll_batch_size: int = 500
    auto_offset_reset: str = "earliest"
    extra: Mapping[str, LibrdkafkaValue | Secret] = field(default_factory=_empty_mapping)
    security_protocol: str = "plaintext"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: Secret | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: Secret | None = None

    @property
    def subscription(self) -> list[str]:
        """What to pass to ``Consumer.subscribe``: librdkafka treats a leading ``^`` as a regex."""
        return [self.topic_regex] if self.topic_regex is not None else list(self.topics)

    def client_config(self) -> dict[str, LibrdkafkaValue]:
        """Settings common to every client (the group member, the DLQ producer, the admin, the
        DLQ readers): the bootstrap servers, TLS and SASL, plus `extra`, secrets revealed.
        Never log the result: print `Settings.redacted()` instead."""
        config: dict[str, LibrdkafkaValue] = {
            k: v.reveal() if isinstance(v, Secret) else v for k, v in self.extra.items()
        }
        config["bootstrap.servers"] = self.bootstrap_servers
        config["security.protocol"] = self.security_protocol
        optional: dict[str, str | Secret | None] = {
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "sasl.password": self.sasl_password,
            "ssl.ca.location": self.ssl_ca_location,
            "ssl.certificate.location": self.ssl_certificate_location,
            "ssl.key.location": self.ssl_key_location,
            "ssl.key.password": self.ssl_key_password,
        }
        for name, value in optional.items():
            if value is not None:
                config[name] = value.reveal() if isinstance(value, Secret) else value
        return config


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
    """Metrics endpoint and logging. Port 0 asks the OS for a free port (tests).

    `severe_lag_s`: the severe-lag threshold, exported as
    ``searchsync_severe_lag_threshold_seconds``
    for the ``SearchsyncSevereLag`` alert (docs/read-side.md).
    """

    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9464
    log_level: str = "INFO"
    severe_lag_s: float = 300.0


@dataclass(frozen=True, slots=True)
class ProjectionSettings:
    """Where the projectors come from: one entry per module or object, in `PROJECTION_ENTRY_FORM`.

    The list is the whole set (name ``searchsync.projection.wiki_page`` too if you want wiki_page
    next to your own types); `searchsync.projection.registry_from_settings` imports it. The plug-in
    contract is in docs/consumer.md, "Adding an aggregate type".
    """

    modules: tuple[str, ...] = ("searchsync.projection.wiki_page",)


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
    if not _is_topic(dlq_topic):  # '.' and '..' fit the pattern but are not topic names
        raise ConfigError(r.key("dlq_topic"), "a Kafka topic name", dlq_topic)
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
        **_kafka_security(r),
    )


_KAFKA_PROTOCOLS: Final = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
_SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _kafka_security(r: _Section) -> dict[str, Any]:
    """security_protocol, SASL and TLS: each setting only where its protocol uses it."""
    protocol = r.choice("security_protocol", _KAFKA_PROTOCOLS, lower=True)
    sasl = protocol.startswith("sasl_")
    tls = protocol in ("ssl", "sasl_ssl")
    out: dict[str, Any] = {"security_protocol": protocol}
    if sasl:
        out["sasl_mechanism"] = r.choice("sasl_mechanism", _SASL_MECHANISMS, upper=True)
        out["sasl_username"] = r.string("sasl_username")
        password = r.optional_secret("sasl_password")
        if password is None:
            raise ConfigError(r.key("sasl_password"), f"a password ({protocol})", None)
        out["sasl_password"] = password
    else:
        _refuse_unless(r, ("sasl_mechanism", "sasl_username", "sasl_password"), "sasl_*")
    names = ("ssl_ca_location", "ssl_certificate_location", "ssl_key_location")
    if tls:
        for name in names:
            out[name] = r.optional_file(name)
        out["ssl_key_password"] = r.optional_secret("ssl_key_password")
        if (out["ssl_certificate_location"] is None) != (out["ssl_key_location"] is None):
            raise ConfigError(
                r.key("ssl_key_location"), "both or neither of ssl_certificate/key_location", None
            )
        if out["ssl_key_password"] is not None and out["ssl_key_location"] is None:
            raise ConfigError(r.key("ssl_key_password"), "set with kafka.ssl_key_location", None)
    else:
        _refuse_unless(r, (*names, "ssl_key_password"), "ssl or sasl_ssl")
    return out


def _refuse_unless(
    r: _Section, keys: tuple[str, ...], modes: str, *, section: str = "kafka.security_protocol"
) -> None:
    """A setting the chosen protocol or mode would ignore is an error, not a silent no-op."""
    for key in keys:
        value, _ = r._raw(key)
        if value is not None and value != "":
            shown = MASK if SENSITIVE_KEY.search(key) else value
            raise ConfigError(r.key(key), f"set only with {section} {modes}", shown)


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
