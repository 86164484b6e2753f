"""Typed settings, read once at start-up by `load_settings(env, toml_path)` (no module reads the
environment or settings at import time).

Precedence: dataclass defaults (the local stack), the TOML file, then ``SEARCHSYNC_<SECTION>_<KEY>``
variables. Every bad value, and every unknown key or ``SEARCHSYNC_`` variable, raises `ConfigError`
naming the dotted key, the expected form and what was given (except ``SEARCHSYNC_CONFIG``, the
config file's path). The local stack's, the benchmarks' and the tests' own variables have prefixes
of their own (``STACK_``, ``APP_DB_``, ``BENCH_``, ``FAULTS_``, ``TEST_``) that the package never
reads as settings.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, cast

from searchsync import naming
from searchsync.config._core import (
    MYSQL_FLAVORS,
    PROJECTION_ENTRY_FORM,
    ElasticsearchSettings,
    MysqlSettings,
    ObservabilitySettings,
    PipelineSettings,
    ProjectionSettings,
    SearchSettings,
    _elasticsearch,
    _mysql,
)
from searchsync.config._kafka import KafkaSettings, _kafka
from searchsync.config._ops import (
    CanarySettings,
    ConnectSettings,
    ExporterSettings,
    FanoutSettings,
    LoadSettings,
    RebuildSettings,
    RelaySettings,
    RepairSettings,
    RetentionSettings,
    _rebuild,
)
from searchsync.config._reader import (
    ENV_PREFIX,
    _plain,
    _Section,
    did_you_mean,
    read_fields,
)
from searchsync.config._secrets import (
    MASK,
    SENSITIVE_KEY,
    Secret,
    scrub_credentials,
    scrub_known,
)
from searchsync.errors import ConfigError

__all__ = [
    "MASK",
    "MYSQL_FLAVORS",
    "PROJECTION_ENTRY_FORM",
    "SENSITIVE_KEY",
    "ConnectSettings",
    "ElasticsearchSettings",
    "FanoutSettings",
    "KafkaSettings",
    "MysqlSettings",
    "PipelineSettings",
    "ProjectionSettings",
    "RebuildSettings",
    "RelaySettings",
    "RepairSettings",
    "RetentionSettings",
    "Secret",
    "Settings",
    "load_settings",
    "scrub_credentials",
    "scrub_known",
]


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything searchsync is configured with; build it with `load_settings`."""

    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    mysql: MysqlSettings = field(default_factory=MysqlSettings)
    elasticsearch: ElasticsearchSettings = field(default_factory=ElasticsearchSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)
    observability: ObservabilitySettings = field(default_factory=ObservabilitySettings)
    projection: ProjectionSettings = field(default_factory=ProjectionSettings)
    rebuild: RebuildSettings = field(default_factory=RebuildSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    connect: ConnectSettings = field(default_factory=ConnectSettings)
    repair: RepairSettings = field(default_factory=RepairSettings)
    exporter: ExporterSettings = field(default_factory=ExporterSettings)
    canary: CanarySettings = field(default_factory=CanarySettings)
    relay: RelaySettings = field(default_factory=RelaySettings)
    fanout: FanoutSettings = field(default_factory=FanoutSettings)
    load: LoadSettings = field(default_factory=LoadSettings)

    def alias(self, aggregate_type: str) -> str:
        """The stable alias every write goes through (invariant 7); see `searchsync.naming`."""
        return naming.alias_name(self.elasticsearch.index_prefix, aggregate_type)

    def canary_id(self) -> str:
        """This deployment's heartbeat row: ``[canary] id``, else the group id (64 characters)."""
        return self.canary.id or self.kafka.group_id[:64]

    def secret_values(self) -> tuple[str, ...]:
        """Every configured secret, revealed, for `configure_logging` to mask; never print it.
        Defaults are left out (masking the local stack's ``searchsync`` would mask every line)."""
        found: list[str] = []
        for section in dataclasses.fields(self):
            value, default = getattr(self, section.name), getattr(Settings(), section.name)
            for f in dataclasses.fields(value):
                item = getattr(value, f.name)
                if item != getattr(default, f.name):
                    items = item.values() if isinstance(item, Mapping) else (item,)
                    found.extend(v.reveal() for v in items if isinstance(v, Secret) and v.reveal())
        return tuple(found)

    def redacted(self) -> dict[str, dict[str, object]]:
        """A plain dict for a start-up log line, with every secret masked."""
        sections = {s.name: getattr(self, s.name) for s in dataclasses.fields(self)}
        return {
            name: {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
            for name, value in sections.items()
        }


# Each section's dataclass, in `Settings`' field order, and the checks of settings read together.
_SECTIONS: Final[Mapping[str, type]] = MappingProxyType(
    {f.name: cast(type, f.default_factory) for f in dataclasses.fields(Settings)}
)
_CHECKS: Final[Mapping[str, Callable[[_Section, Any], None]]] = MappingProxyType(
    {
        "kafka": _kafka,
        "mysql": _mysql,
        "elasticsearch": _elasticsearch,
        "rebuild": _rebuild,
    }
)


def load_settings(env: Mapping[str, str], toml_path: Path | None = None) -> Settings:
    """Defaults, then the TOML file, then ``SEARCHSYNC_<SECTION>_<KEY>`` environment variables."""
    toml = _read_toml(toml_path) if toml_path is not None else {}
    from_env = _env_sections(env)
    readers = {  # every section's keys are checked before any value is read
        name: _Section(name, cls, toml.get(name, {}), from_env.get(name, {}))
        for name, cls in _SECTIONS.items()
    }
    built: dict[str, Any] = {}
    for name, cls in _SECTIONS.items():
        built[name] = read_fields(readers[name], cls)
        if name in _CHECKS:
            _CHECKS[name](readers[name], built[name])
    settings = Settings(**built)
    if settings.search.engine == "opensearch" and settings.elasticsearch.api_key is not None:
        raise ConfigError(
            "elasticsearch.api_key", "unset with search.engine = opensearch (basic auth)", MASK
        )
    kafka, template = settings.kafka, settings.relay.topic_template
    if not kafka.topics and kafka.topic_regex is None:  # topics: one per registered type
        head, _, tail = template.partition("{type}")
        dlq = kafka.dlq_topic
        if dlq.startswith(head) and dlq.endswith(tail) and len(dlq) > len(head) + len(tail):
            raise ConfigError(
                "kafka.dlq_topic",
                f"a topic the consumer does not read itself (relay.topic_template {template!r})",
                dlq,
            )
    return settings


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError("config file", "a readable TOML file", f"{path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("config file", "valid TOML", f"{path}: {exc}") from exc
    for name, table in document.items():
        if name not in _SECTIONS:
            raise ConfigError(name, f"one of the sections {sorted(_SECTIONS)}", name)
        if not isinstance(table, dict):
            raise ConfigError(name, "a table ([section])", table)
    return document


def _env_sections(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    for variable, value in env.items():
        if not variable.startswith(ENV_PREFIX) or variable == f"{ENV_PREFIX}CONFIG":
            continue  # SEARCHSYNC_CONFIG is not a setting: the config file's path
        rest = variable[len(ENV_PREFIX) :]
        for name in _SECTIONS:
            prefix = f"{name.upper()}_"
            if rest.startswith(prefix):
                key = rest[len(prefix) :].lower()
                if not key:
                    raise ConfigError(variable, f"{ENV_PREFIX}{name.upper()}_<KEY>", variable)
                sections.setdefault(name, {})[key] = value
                break
        else:
            _refuse_misspelt(variable)
    return sections


def _refuse_misspelt(variable: str) -> None:
    """A ``SEARCHSYNC_`` variable in no section: a `ConfigError` naming the nearest setting."""
    known = [
        f"{ENV_PREFIX}{name.upper()}_{f.name.upper()}"
        for name, cls in _SECTIONS.items()
        for f in dataclasses.fields(cls)
    ]
    hint = f"a known setting {ENV_PREFIX}<SECTION>_<KEY>{did_you_mean(variable, known)}"
    raise ConfigError(variable, f"{hint} (sections: {', '.join(sorted(_SECTIONS))})", variable)
