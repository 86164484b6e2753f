"""The Debezium connector that publishes ``search_outbox`` (its Outbox Event Router emits the
records `searchsync.relay.port.router_record` would) and the Connect worker lines it needs;
`searchsync schema connector` prints both, for MySQL (``MySqlConnector``) or MariaDB
(``MariaDbConnector``). Credentials stay out of the configuration: a Connect config provider
(``file`` or ``env``) resolves them on the worker. The files in the repository's ``connect/``
folder are this configuration with placeholders (`searchsync.kafka.connect_files`).

The schema history clients are secured as ``[kafka]`` secures searchsync's own. ``[kafka]`` speaks
librdkafka (PEM files, ``sasl.username``/``sasl.password``); the connector's
producer and consumer are Java clients: ``security.protocol`` upper-case, SASL through
``sasl.jaas.config``, the CA as a PEM trust store, a client certificate and key as PEM contents
read by Kafka's ``DirectoryConfigProvider`` (``dir``). No secret is written out: the SASL password
and the key's password are placeholders the worker's config provider resolves."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from searchsync.config import KafkaSettings
from searchsync.mysql.dialect import Flavor

ProviderKind = Literal["file", "env"]
SecretName = Literal["user", "password", "kafka_password", "kafka_key_password"]

_PROVIDER_CLASSES: Final[dict[str, str]] = {
    "file": "org.apache.kafka.common.config.provider.FileConfigProvider",
    "env": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    "dir": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
}
_CONNECTOR_CLASSES: Final[dict[Flavor, str]] = {
    "mysql": "io.debezium.connector.mysql.MySqlConnector",
    "mariadb": "io.debezium.connector.mariadb.MariaDbConnector",
}
# ``[mysql] ssl_mode`` -> each connector's ``database.ssl.mode`` (MySqlConnectorConfig: disabled,
# preferred, required, verify_ca, verify_identity; MariaDB's: disable, trust, verify-ca,
# verify-full)
_SSL_MODES: Final[dict[Flavor, dict[str, str]]] = {
    "mysql": {mode: mode for mode in ("disabled", "verify_ca", "verify_identity")},
    "mariadb": {"disabled": "disable", "verify_ca": "verify-ca", "verify_identity": "verify-full"},
}
HEARTBEAT_INTERVAL_MS: Final = 10_000
"""Debezium's heartbeat: the connector's offset keeps moving while the outbox is quiet, so a
restart does not ask for a binlog position the server has already purged."""
_HEADERS: Final = (
    "operation:header:searchsync-operation,"
    "source_revision:header:searchsync-revision,"
    "aggregate_type:header:searchsync-aggregate-type"
)

_LOGIN_MODULES: Final = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


@dataclass(frozen=True, slots=True)
class Credentials:
    """Where the worker finds Debezium's MySQL user and password: ``file``, a properties file with
    keys ``user`` and ``password``; ``env``, variables ``<prefix>USER`` and ``<prefix>PASSWORD``."""

    kind: ProviderKind = "file"
    source: str = "/etc/kafka-connect/searchsync-debezium.properties"

    def reference(self, key: SecretName) -> str:
        """The placeholder the worker replaces with the secret `key` (Kafka's SASL password and
        TLS key password are ``kafka_password`` and ``kafka_key_password``)."""
        if self.kind == "file":
            return f"${{file:{self.source}:{key}}}"
        return f"${{env:{self.source}{key.upper()}}}"


@dataclass(frozen=True, slots=True)
class ConnectorTarget:
    """The database the connector reads and the Kafka it writes its schema history to."""

    mysql_host: str = "127.0.0.1"
    mysql_port: int | str = 3306  # a str only for a placeholder (connect/)
    database: str = "searchsync"
    server_id: int | str = 184054  # its replica id: unique among everything replicating the server
    topic_prefix: str = "searchsync"  # unique per connector on the Kafka cluster
    schema_history_topic: str = "searchsync.schema-history"
    kafka_bootstrap: str = "127.0.0.1:9092"
    topic_template: str = "outbox.event.{type}"  # the outbox topic of a type, as the relay's
    flavor: Flavor = "mariadb"
    ssl_mode: str = "disabled"  # as ``[mysql] ssl_mode``
    kafka: KafkaSettings = field(default_factory=KafkaSettings)  # the schema history's: [kafka]


def outbox_connector_config(target: ConnectorTarget, credentials: Credentials) -> dict[str, str]:
    """The connector's configuration (every value a string, as Connect's REST API takes it)."""
    history = history_client_settings(target.kafka, credentials.reference)
    return {
        "connector.class": _CONNECTOR_CLASSES[target.flavor],
        "tasks.max": "1",
        "database.hostname": target.mysql_host,
        "database.port": str(target.mysql_port),
        "database.user": credentials.reference("user"),
        "database.password": credentials.reference("password"),
        "database.server.id": str(target.server_id),
        "database.ssl.mode": _SSL_MODES[target.flavor][target.ssl_mode],
        "topic.prefix": target.topic_prefix,
        "database.include.list": target.database,
        "table.include.list": f"{target.database}.search_outbox",
        "include.schema.changes": "false",
        "snapshot.mode": "no_data",
        "schema.history.internal.kafka.bootstrap.servers": target.kafka_bootstrap,
        "schema.history.internal.kafka.topic": target.schema_history_topic,
        "schema.history.internal.store.only.captured.tables.ddl": "true",
        **{f"schema.history.internal.producer.{k}": v for k, v in history.items()},
        **{f"schema.history.internal.consumer.{k}": v for k, v in history.items()},
        "heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
        "tombstones.on.delete": "false",
        "poll.interval.ms": "100",
        "connect.keep.alive.interval.ms": "2000",
        "connect.timeout.ms": "10000",
        "transforms": "outbox",
        "transforms.outbox.type": "io.debezium.transforms.outbox.EventRouter",
        "transforms.outbox.table.field.event.id": "event_id",
        "transforms.outbox.table.field.event.key": "aggregate_id",
        "transforms.outbox.table.field.event.payload": "payload",
        "transforms.outbox.table.fields.additional.placement": _HEADERS,
        "transforms.outbox.route.by.field": "aggregate_type",
        "transforms.outbox.route.topic.replacement": target.topic_template.replace(
            "{type}", "${routedByValue}"
        ),
        "transforms.outbox.table.expand.json.payload": "true",
        "transforms.outbox.table.op.invalid.behavior": "warn",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
    }


def worker_provider_lines(kind: ProviderKind, *, files: bool = False) -> list[str]:
    """The worker properties that declare the config provider `kind` (a connector cannot declare one
    itself), and with `files` the ``dir`` provider that reads the Kafka client certificate and key
    of the schema history."""
    kinds = [kind, "dir"] if files else [kind]
    return [
        f"config.providers={','.join(kinds)}",
        *(f"config.providers.{k}.class={_PROVIDER_CLASSES[k]}" for k in kinds),
    ]


def history_client_settings(kafka: KafkaSettings, secret: Callable[[Any], str]) -> dict[str, str]:
    """The Java client settings (without the ``schema.history.internal.producer.`` or
    ``consumer.`` prefix); `secret` turns ``kafka_password``/``kafka_key_password`` into the
    provider placeholder. ValueError for a SASL user name a JAAS string cannot quote."""
    out = {"security.protocol": kafka.security_protocol.upper()}
    if kafka.sasl_mechanism is not None:
        user = kafka.sasl_username or ""
        if '"' in user or "\\" in user:
            raise ValueError(f"kafka.sasl_username {user!r}: no quotes or backslashes in a JAAS")
        out["sasl.mechanism"] = kafka.sasl_mechanism
        out["sasl.jaas.config"] = (
            f'{_LOGIN_MODULES[kafka.sasl_mechanism]} required username="{user}"'
            f' password="{secret("kafka_password")}";'
        )
    if kafka.ssl_ca_location is not None:
        out["ssl.truststore.type"] = "PEM"
        out["ssl.truststore.location"] = kafka.ssl_ca_location
    if kafka.ssl_certificate_location is not None and kafka.ssl_key_location is not None:
        out["ssl.keystore.type"] = "PEM"
        out["ssl.keystore.certificate.chain"] = _file(kafka.ssl_certificate_location)
        out["ssl.keystore.key"] = _file(kafka.ssl_key_location)
        if kafka.ssl_key_password is not None:
            out["ssl.key.password"] = secret("kafka_key_password")
    return out


def _file(path: str) -> str:
    """The ``dir`` provider's placeholder for the contents of the file at `path`."""
    folder, name = posixpath.split(path)
    return f"${{dir:{folder or '.'}:{name}}}"
