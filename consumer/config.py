"""Typed settings, read once at start-up and passed to whoever needs them.

Nothing here reads the environment by itself: `load_settings(env, toml_path)` gets both from its
caller (the CLI), so tests pass plain dicts and no module reads settings at import time.

Precedence: dataclass defaults (the local stack), then the TOML file, then environment variables
named ``SEARCHSYNC_<SECTION>_<KEY>`` (e.g. ``SEARCHSYNC_MYSQL_PASSWORD``). Every bad value raises
`ConfigError` naming the dotted key, the expected form and what was given; unknown keys are errors
too, so a typo cannot silently fall back to a default. Environment variables whose name does not
start with a known section (``SEARCHSYNC_CONFIG`` for instance) are left to the caller.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Final
from urllib.parse import urlsplit

from consumer import naming
from consumer.duration import DURATION_FORM, format_duration, parse_duration
from consumer.errors import ConfigError

__all__ = [
    "ConnectSettings",
    "ElasticsearchSettings",
    "KafkaSettings",
    "LibrdkafkaValue",
    "MysqlSettings",
    "ObservabilitySettings",
    "PipelineSettings",
    "ProjectionSettings",
    "RebuildSettings",
    "RetentionSettings",
    "Secret",
    "Settings",
    "load_settings",
]

LibrdkafkaValue = str | int | float | bool

ENV_PREFIX: Final = "SEARCHSYNC_"
_MASK: Final = "***"
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_GROUP = re.compile(r"[A-Za-z0-9._-]{1,200}")  # leaves room for the ".dlq" / ".replay" suffixes
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}|[0-9A-Fa-f:.]{2,45}")  # name, IPv4 or bare IPv6
_HOST_PORT = re.compile(
    r"(?P<host>[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):(?P<port>\d{1,5})"
)
_INDEX_PREFIX = naming.INDEX_PREFIX
_DATABASE = re.compile(r"[A-Za-z0-9_$]{1,64}")
_LIBRDKAFKA_KEY = re.compile(r"[a-z][a-z0-9_.]{0,127}")
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
# librdkafka settings searchsync owns: overriding them would break the commit protocol.
_RESERVED_KAFKA: Final = frozenset(
    {"bootstrap.servers", "group.id", "enable.auto.commit", "enable.auto.offset.store"}
)
_SENSITIVE_KAFKA = re.compile(r"password|secret|pem|jaas|token|credential|api\.key")
_LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
_PROJECTION_ENTRY = re.compile(rf"{_DOTTED}(?::{_DOTTED})?")
PROJECTION_ENTRY_FORM: Final = (
    "importable names: 'pkg.module' (a module with projectors() returning Projectors) or"
    " 'pkg.module:name' (a Projector, or a callable returning one Projector or several)"
)


class Secret:
    """A string that never shows itself in a repr, a log line or a traceback."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        """The real value, for the one call that needs it (e.g. the MySQL connect)."""
        return self._value

    def __repr__(self) -> str:
        return _MASK

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def _empty_mapping() -> Mapping[str, LibrdkafkaValue]:
    return MappingProxyType({})


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


@dataclass(frozen=True, slots=True)
class RebuildSettings:
    """`searchsync rebuild` (docs/design.md, Rebuild): chunking, catch-up, verification limits.

    `topic_template` names the outbox topic of a type (``{type}`` is replaced); it must be one the
    consumer subscribes to. `queries` are sample query texts matched against `query_field` in the
    old and the new index; when empty, `query_count` titles sampled from the new index are used.
    `metrics_port` 0 serves no metrics.
    """

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
    """The repair wheel (docs/design.md, "Repair"). Changing `bucket_count` starts a new epoch.

    `settle_s` is the wait before a finding is re-checked (a few times the consumer's
    commit-to-searchable p99); `content_share` the share of buckets whose content is hashed per
    rotation; `slo_s`, `max_staleness_s`, `gamma`, `epsilon`, `ewma_alpha` the schedule;
    `page_*` the adaptive page size; `appends_per_s` the outbox append ceiling; `daemon_*` the
    ``--daemon`` loop (buckets per tick, seconds between ticks).
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


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything searchsync is configured with; build it with `load_settings`."""

    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    mysql: MysqlSettings = field(default_factory=MysqlSettings)
    elasticsearch: ElasticsearchSettings = field(default_factory=ElasticsearchSettings)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    projection: ProjectionSettings = field(default_factory=ProjectionSettings)
    rebuild: RebuildSettings = field(default_factory=RebuildSettings)
    retention: RetentionSettings = field(default_factory=lambda: RetentionSettings())
    connect: ConnectSettings = field(default_factory=lambda: ConnectSettings())
    repair: RepairSettings = field(default_factory=RepairSettings)

    def alias(self, aggregate_type: str) -> str:
        """The stable alias every write goes through (invariant 7); see `consumer.naming`."""
        return naming.alias_name(self.elasticsearch.index_prefix, aggregate_type)

    def redacted(self) -> dict[str, dict[str, object]]:
        """A plain dict for a start-up log line, with every secret masked."""
        out: dict[str, dict[str, object]] = {}
        for section in dataclasses.fields(self):
            value = getattr(self, section.name)
            out[section.name] = {
                f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
            }
        return out


def _plain(value: object) -> object:
    if isinstance(value, Secret):
        return _MASK
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {k: _MASK if _SENSITIVE_KAFKA.search(str(k)) else v for k, v in value.items()}
    return value


_SECTIONS: Final[Mapping[str, type]] = MappingProxyType(
    {
        "kafka": KafkaSettings,
        "mysql": MysqlSettings,
        "elasticsearch": ElasticsearchSettings,
        "pipeline": PipelineSettings,
        "observability": ObservabilitySettings,
        "projection": ProjectionSettings,
        "rebuild": RebuildSettings,
        "repair": RepairSettings,
    }
)
# Sections defined at the end of the module are added by `_sections()`.


def load_settings(env: Mapping[str, str], toml_path: Path | None = None) -> Settings:
    """Defaults, then the TOML file, then ``SEARCHSYNC_<SECTION>_<KEY>`` environment variables."""
    toml = _read_toml(toml_path) if toml_path is not None else {}
    from_env = _env_sections(env)
    readers = {
        name: _Section(name, cls, toml.get(name, {}), from_env.get(name, {}))
        for name, cls in _sections().items()
    }
    return Settings(
        kafka=_kafka(readers["kafka"]),
        mysql=_mysql(readers["mysql"]),
        elasticsearch=_elasticsearch(readers["elasticsearch"]),
        pipeline=_pipeline(readers["pipeline"]),
        observability=_observability(readers["observability"]),
        projection=_projection(readers["projection"]),
        rebuild=_rebuild(readers["rebuild"]),
        retention=_retention(readers["retention"]),
        connect=_connect(readers["connect"]),
        repair=_repair(readers["repair"]),
    )


def _read_toml(path: Path) -> dict[str, Mapping[str, object]]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError("config file", "a readable TOML file", f"{path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("config file", "valid TOML", f"{path}: {exc}") from exc
    sections: dict[str, Mapping[str, object]] = {}
    for name, table in document.items():
        if name not in _sections():
            raise ConfigError(name, f"one of the sections {sorted(_sections())}", name)
        if not isinstance(table, dict):
            raise ConfigError(name, "a table ([section])", table)
        sections[name] = table
    return sections


def _env_sections(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    for variable, value in env.items():
        if not variable.startswith(ENV_PREFIX):
            continue
        rest = variable[len(ENV_PREFIX) :]
        for name in _sections():
            prefix = f"{name.upper()}_"
            if rest.startswith(prefix):
                key = rest[len(prefix) :].lower()
                if not key:
                    raise ConfigError(variable, f"{ENV_PREFIX}{name.upper()}_<KEY>", variable)
                sections.setdefault(name, {})[key] = value
                break
    return sections


class _Section:
    """Reads one section's raw values (TOML typed, env as strings) into checked Python values.

    Defaults come from the section's dataclass, so they are written down exactly once.
    """

    def __init__(
        self, name: str, cls: type, toml: Mapping[str, object], env: Mapping[str, str]
    ) -> None:
        self.name = name
        self._defaults: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                self._defaults[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                self._defaults[f.name] = f.default_factory()
        for key in (*toml, *env):
            if key not in self._defaults:
                shown = f"{ENV_PREFIX}{name.upper()}_{key.upper()}" if key in env else key
                raise ConfigError(
                    f"{name}.{key}", f"one of the keys {sorted(self._defaults)}", shown
                )
        self._toml = toml
        self._env = env

    def key(self, key: str) -> str:
        return f"{self.name}.{key}"

    def given(self, key: str) -> bool:
        return key in self._env or key in self._toml

    def _raw(self, key: str) -> tuple[object, bool]:
        """The value for `key` and whether it is an environment string that needs parsing."""
        if key in self._env:
            return self._env[key], True
        if key in self._toml:
            return self._toml[key], False
        return self._defaults[key], False

    def string(self, key: str, pattern: re.Pattern[str] | None = None, form: str = "") -> str:
        value, _ = self._raw(key)
        expected = form or "a non-empty string"
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(self.key(key), expected, value)
        value = value.strip()
        if pattern is not None and not pattern.fullmatch(value):
            raise ConfigError(self.key(key), expected, value)
        return value

    def optional_string(self, key: str) -> str | None:
        value, _ = self._raw(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(self.key(key), "a non-empty string", value)
        return value.strip()

    def choice(self, key: str, choices: tuple[str, ...], *, upper: bool = False) -> str:
        value, _ = self._raw(key)
        normal = value.strip().upper() if upper and isinstance(value, str) else value
        if not isinstance(normal, str) or normal.strip() not in choices:
            raise ConfigError(self.key(key), f"one of {', '.join(choices)}", value)
        return normal.strip()

    def integer(self, key: str, lo: int, hi: int) -> int:
        value, from_env = self._raw(key)
        expected = f"an integer in {lo}..{hi}"
        if from_env and isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            value = int(value.strip())
        if type(value) is not int or not lo <= value <= hi:
            raise ConfigError(self.key(key), expected, value)
        return value

    def number(self, key: str, lo: float, hi: float, *, lo_open: bool = False) -> float:
        """A finite float in the range (an int is fine too, a bool is not)."""
        value, from_env = self._raw(key)
        expected = f"a number in {'(' if lo_open else '['}{lo}, {hi}]"
        if from_env and isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ConfigError(self.key(key), expected, value) from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(self.key(key), expected, value)
        number = float(value)
        if not math.isfinite(number) or number > hi or number < lo or (lo_open and number == lo):
            raise ConfigError(self.key(key), expected, value)
        return number

    def string_list(
        self, key: str, check: Callable[[str], bool], form: str, *, allow_empty: bool = False
    ) -> tuple[str, ...]:
        """A list in TOML, a comma-separated string in the environment."""
        value, from_env = self._raw(key)
        expected = f"a list of {form}"
        if from_env and isinstance(value, str):
            value = [item.strip() for item in value.split(",")] if value.strip() else []
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list) or (not value and not allow_empty):
            raise ConfigError(self.key(key), expected, value)
        for item in value:
            if not isinstance(item, str) or not check(item.strip()):
                raise ConfigError(self.key(key), expected, item)
        return tuple(item.strip() for item in value)

    def secret(self, key: str) -> Secret:
        value, _ = self._raw(key)
        if isinstance(value, Secret):
            return value
        if not isinstance(value, str):
            raise ConfigError(self.key(key), "a string", _MASK)  # never echo a secret
        return Secret(value)

    def librdkafka(self, key: str) -> Mapping[str, LibrdkafkaValue]:
        """A TOML table, or a JSON object in the environment, of extra librdkafka settings."""
        value, from_env = self._raw(key)
        expected = "a table of librdkafka settings (string, integer, float or bool values)"
        if from_env and isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ConfigError(self.key(key), f"{expected} as a JSON object", _MASK) from None
        if not isinstance(value, Mapping):
            raise ConfigError(self.key(key), expected, type(value).__name__)
        checked: dict[str, LibrdkafkaValue] = {}
        for name, item in value.items():
            dotted = f"{self.key(key)}.{name}"
            if not isinstance(name, str) or not _LIBRDKAFKA_KEY.fullmatch(name):
                raise ConfigError(
                    dotted, "a librdkafka property name like 'socket.timeout.ms'", name
                )
            if name in _RESERVED_KAFKA:
                raise ConfigError(dotted, "a setting searchsync does not own itself", name)
            if not isinstance(item, str | int | float | bool):
                raise ConfigError(dotted, expected, type(item).__name__)
            checked[name] = item
        return MappingProxyType(checked)


def _is_topic(name: str) -> bool:
    return bool(_TOPIC.fullmatch(name)) and name not in (".", "..")


def _is_host_port(item: str) -> bool:
    match = _HOST_PORT.fullmatch(item)
    return match is not None and 1 <= int(match["port"]) <= 65_535


def _is_http_url(item: str) -> bool:
    try:
        parts = urlsplit(item)
        port = parts.port  # raises ValueError on a malformed or out-of-range port
    except ValueError:
        return False
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and port != 0
        and not parts.query
        and not parts.fragment
        and not any(c.isspace() for c in item)
    )


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


_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")


def _rebuild(r: _Section) -> RebuildSettings:
    lo = r.integer("chunk_min", 1, 1_000_000)
    hi = r.integer("chunk_max", 1, 1_000_000)
    if hi < lo:
        raise ConfigError(r.key("chunk_max"), f">= rebuild.chunk_min ({lo})", hi)
    initial = r.integer("chunk_initial", 1, 1_000_000)
    if not lo <= initial <= hi:
        raise ConfigError(r.key("chunk_initial"), f"between {lo} and {hi}", initial)
    template = r.string("topic_template", form="a topic name with {type}")
    if "{type}" not in template or not _is_topic(template.replace("{type}", "t")):
        raise ConfigError(r.key("topic_template"), "a topic name containing {type}", template)
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


# -- [retention]: the tombstone purge and the outbox prune ----------------------------------------


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """How long deleted documents and outbox rows must be kept (docs/design.md, "Tombstones and
    their purge" and "Outbox pruning"). Durations are written like ``7d``, ``36h``, ``90m``.

    The shortest ``tombstones purge --older-than`` allowed is

        min_tombstone_age = max_event_delay + retry_window + dlq_replay_window + margin

    (defaults 1d + 1d + 4d + 1d = 7d): a tombstone younger than that may still meet an event, a
    retry or a replayed dead letter older than its delete, which must find the tombstone's
    version to be refused. Setting `min_tombstone_age` replaces the sum (tests set a tiny one).

    - `max_event_delay`: the longest an event may take from its commit to the consumer (Kafka
      backlog, a stopped group, a lagging replica); `retry_window`: the longest the consumer
      retries one event before dead-lettering it (at least ``pipeline.retry_max_attempts`` times
      ``pipeline.retry_max_delay_s``); `dlq_replay_window`: how long a dead letter may wait for
      ``dlq replay``; `margin`: clock skew and slack.
    - `purge_batch_size`: documents per scan page and per bulk of guarded deletes.
    - `min_outbox_age`: the shortest ``outbox prune --older-than`` allowed; `prune_batch_size`
      rows per delete transaction; `prune_pause_s` the pause between two of them.
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


# -- [connect]: Kafka Connect's REST API (the Debezium connector's state) -------------------------

_CONNECTOR = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True, slots=True)
class ConnectSettings:
    """Where Kafka Connect answers and which connector publishes the outbox."""

    url: str = "http://127.0.0.1:8083"
    connector: str = "searchsync-outbox"
    request_timeout_s: float = 10.0


def _connect(r: _Section) -> ConnectSettings:
    url = r.string("url", form="an http(s)://host[:port] URL")
    if not _is_http_url(url):
        raise ConfigError(r.key("url"), "an http(s)://host[:port] URL", url)
    return ConnectSettings(
        url=url.rstrip("/"),
        connector=r.string("connector", _CONNECTOR, "a connector name of [A-Za-z0-9._-]"),
        request_timeout_s=r.number("request_timeout_s", 0.0, 300.0, lo_open=True),
    )


def _sections() -> Mapping[str, type]:
    """Every section: `_SECTIONS` plus those defined at the end of the module."""
    return {**_SECTIONS, "retention": RetentionSettings, "connect": ConnectSettings}


def _repair(r: _Section) -> RepairSettings:
    page_min = r.integer("page_min", 1, 1_000_000)
    page_max = r.integer("page_max", 1, 1_000_000)
    if page_max < page_min:
        raise ConfigError(r.key("page_max"), f">= repair.page_min ({page_min})", page_max)
    flag, from_env = r._raw("mysql_sync_hash_column")
    if from_env and isinstance(flag, str) and flag.strip().lower() in ("true", "false", "1", "0"):
        flag = flag.strip().lower() in ("true", "1")
    if not isinstance(flag, bool):
        raise ConfigError(r.key("mysql_sync_hash_column"), "true or false", flag)
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
        mysql_sync_hash_column=flag,
        daemon_buckets_per_tick=r.integer("daemon_buckets_per_tick", 1, 1 << 20),
        daemon_interval_s=r.number("daemon_interval_s", 0.0, 86_400.0),
    )
