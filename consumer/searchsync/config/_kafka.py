"""The [kafka] section: where events are read and where dead letters go."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from searchsync.config._reader import (
    _TOPIC,
    LibrdkafkaValue,
    _Section,
    integer,
    number,
    one_of,
    setting,
    text,
)
from searchsync.config._secrets import MASK, SENSITIVE_KEY, Secret
from searchsync.errors import ConfigError

_GROUP = re.compile(r"[A-Za-z0-9._-]{1,200}")  # leaves room for the ".dlq" / ".replay" suffixes
_HOST_PORT = re.compile(
    r"(?P<host>[A-Za-z0-9._-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]):(?P<port>\d{1,5})"
)
_LIBRDKAFKA_KEY = re.compile(r"[a-z][a-z0-9_.]{0,127}")
# librdkafka settings searchsync owns: overriding them would break the commit protocol.
_RESERVED_KAFKA: Final = frozenset(
    {"bootstrap.servers", "group.id", "enable.auto.commit", "enable.auto.offset.store"}
)
# librdkafka settings with a typed key of their own in [kafka]: one name per concept.
TYPED_KAFKA: Final = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.mechanisms": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "ssl.ca.location": "ssl_ca_location",
    "ssl.certificate.location": "ssl_certificate_location",
    "ssl.key.location": "ssl_key_location",
    "ssl.key.password": "ssl_key_password",
}


_KAFKA_PROTOCOLS: Final = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
_SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SASL: Final = ("security_protocol", ("sasl_plaintext", "sasl_ssl"), "sasl_*")
_TLS: Final = ("security_protocol", ("ssl", "sasl_ssl"), "ssl or sasl_ssl")


def _librdkafka(r: _Section, key: str) -> Mapping[str, LibrdkafkaValue | Secret]:
    """A TOML table, or a JSON object in the environment, of extra librdkafka settings."""
    value, from_env = r._raw(key)
    expected = "a table of librdkafka settings (string, integer, float or bool values)"
    if from_env and isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ConfigError(r.key(key), f"{expected} as a JSON object", MASK) from None
    if not isinstance(value, Mapping):
        raise ConfigError(r.key(key), expected, type(value).__name__)
    checked: dict[str, LibrdkafkaValue | Secret] = {}
    for name, item in value.items():
        dotted = f"{r.key(key)}.{name}"
        if not isinstance(name, str) or not _LIBRDKAFKA_KEY.fullmatch(name):
            raise ConfigError(dotted, "a librdkafka property name like 'socket.timeout.ms'", name)
        if name in _RESERVED_KAFKA:
            raise ConfigError(dotted, "a setting searchsync does not own itself", name)
        if name in TYPED_KAFKA:
            raise ConfigError(dotted, f"kafka.{TYPED_KAFKA[name]} instead", name)
        if not isinstance(item, str | int | float | bool):
            raise ConfigError(dotted, expected, type(item).__name__)
        # a credential stays wrapped until a client is built (KafkaSettings.client_config)
        checked[name] = Secret(str(item)) if SENSITIVE_KEY.search(name) else item
    return MappingProxyType(checked)


def _servers(r: _Section, key: str) -> str:
    servers = r.string(key, form="comma-separated host:port pairs, e.g. '127.0.0.1:9092'")
    items = [item.strip() for item in servers.split(",")]
    if not all((m := _HOST_PORT.fullmatch(i)) and 1 <= int(m["port"]) <= 65_535 for i in items):
        raise ConfigError(r.key(key), "comma-separated host:port pairs", servers)
    return ",".join(items)


def _group(r: _Section, key: str) -> str:
    return r.string(key, _GROUP, "1..200 of [A-Za-z0-9._-]")


def _topics(r: _Section, key: str) -> tuple[str, ...]:
    """Empty when unset (one topic per registered aggregate type) or beside `topic_regex`."""
    if not r.given(key) or r._raw("topic_regex")[0] is not None:
        return ()
    return r.string_list(key, _TOPIC.fullmatch, "Kafka topic names")


def _topic_regex(r: _Section, key: str) -> str | None:
    regex = r.optional_string(key)
    if regex is None:
        return None
    if r.given("topics"):
        raise ConfigError(r.key("topics"), "topics or topic_regex, not both", "both")
    if not regex.startswith("^"):
        raise ConfigError(r.key(key), "a regex starting with '^'", regex)
    try:
        re.compile(regex)
    except re.error as exc:
        raise ConfigError(r.key(key), f"a valid regex ({exc})", regex) from None
    return regex


def _dlq_topic(r: _Section, key: str) -> str:
    """``<group_id>.dlq`` unless set."""
    if r.given(key):
        return r.string(key, _TOPIC, "a Kafka topic name")
    return f"{_group(r, 'group_id')}.dlq"


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """Where to read events and where dead letters go. Setting `topic_regex` empties `topics`;
    `dlq_topic` defaults to ``<group_id>.dlq`` when loaded. Loaded without ``topics`` or
    ``topic_regex``, `topics` is empty: the consumer reads one topic per registered type
    (``[relay] topic_template``; `searchsync.projection.topics.consumed_topics`)."""

    bootstrap_servers: str = setting("127.0.0.1:9092", _servers)
    group_id: str = setting("searchsync", _group)
    topics: tuple[str, ...] = setting((), _topics)  # empty: one per registered type
    topic_regex: str | None = setting(None, _topic_regex)
    dlq_topic: str = setting("searchsync.dlq", _dlq_topic)
    # how long a silent member keeps its partitions (>= the broker's 6 s minimum)
    session_timeout_ms: int = setting(10_000, integer(1_000, 3_600_000))
    max_poll_interval_ms: int = setting(
        300_000, integer(1_000, 86_400_000), above="session_timeout_ms"
    )
    poll_timeout_s: float = setting(0.1, number(0.0, 60.0, lo_open=True))
    poll_batch_size: int = setting(500, integer(1, 100_000))
    auto_offset_reset: str = setting("earliest", one_of(("earliest", "latest")))
    # how often a running member compares its topics' ids with the group's (a re-created topic)
    lineage_check_s: float = setting(10.0, number(0.5, 3_600.0))
    extra: Mapping[str, LibrdkafkaValue | Secret] = field(
        default_factory=lambda: MappingProxyType({}), metadata={"read": _librdkafka}
    )
    security_protocol: str = setting("plaintext", one_of(_KAFKA_PROTOCOLS, lower=True))
    # SASL, and TLS: each setting only where its protocol uses it
    sasl_mechanism: str | None = setting(None, one_of(_SASL_MECHANISMS, upper=True), only=_SASL)
    sasl_username: str | None = setting(None, text(), only=_SASL)
    sasl_password: Secret | None = setting(None, _Section.optional_secret, only=_SASL)
    ssl_ca_location: str | None = setting(None, _Section.optional_file, only=_TLS)
    ssl_certificate_location: str | None = setting(None, _Section.optional_file, only=_TLS)
    ssl_key_location: str | None = setting(None, _Section.optional_file, only=_TLS)
    ssl_key_password: Secret | None = setting(None, _Section.optional_secret, only=_TLS)

    def client_config(self) -> dict[str, LibrdkafkaValue]:
        """Settings every Kafka client shares (servers, TLS, SASL, `extra`), secrets revealed:
        never log the result (print `Settings.redacted()`)."""
        config: dict[str, LibrdkafkaValue] = {
            k: v.reveal() if isinstance(v, Secret) else v for k, v in self.extra.items()
        }
        config["bootstrap.servers"] = self.bootstrap_servers
        for name, key in TYPED_KAFKA.items():  # security.protocol, SASL and TLS when set
            value = getattr(self, key)
            if value is not None and name != "sasl.mechanisms":
                config[name] = value.reveal() if isinstance(value, Secret) else value
        return config


def _kafka(r: _Section, kafka: KafkaSettings) -> None:
    """What no one setting can say alone: the DLQ is not read, a password with SASL, TLS pairs."""
    regex, dlq = kafka.topic_regex, kafka.dlq_topic
    if dlq in kafka.topics or (regex is not None and re.match(regex, dlq)):
        raise ConfigError(r.key("dlq_topic"), "a topic the consumer does not read itself", dlq)
    if kafka.sasl_mechanism is not None and kafka.sasl_password is None:
        raise ConfigError(r.key("sasl_password"), f"a password ({kafka.security_protocol})", None)
    if (kafka.ssl_certificate_location is None) != (kafka.ssl_key_location is None):
        raise ConfigError(
            r.key("ssl_key_location"), "both or neither of ssl_certificate/key_location", None
        )
    if kafka.ssl_key_password is not None and kafka.ssl_key_location is None:
        raise ConfigError(r.key("ssl_key_password"), "set with kafka.ssl_key_location", None)
