"""The Debezium connector that publishes ``search_outbox`` (its Outbox Event Router emits the
records `searchsync.relay.port.router_record` would) and the Connect worker lines it needs;
`searchsync schema connector` prints both. Credentials stay out of the configuration: a Connect
config provider (``file`` or ``env``) resolves them on the worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

ProviderKind = Literal["file", "env"]

_PROVIDER_CLASSES: Final[dict[str, str]] = {
    "file": "org.apache.kafka.common.config.provider.FileConfigProvider",
    "env": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
}
_HEADERS: Final = (
    "operation:header:searchsync-operation,"
    "source_revision:header:searchsync-revision,"
    "aggregate_type:header:searchsync-aggregate-type"
)


@dataclass(frozen=True, slots=True)
class Credentials:
    """Where the worker finds Debezium's MySQL user and password: ``file``, a properties file with
    keys ``user`` and ``password``; ``env``, variables ``<prefix>USER`` and ``<prefix>PASSWORD``."""

    kind: ProviderKind = "file"
    source: str = "/etc/kafka-connect/searchsync-debezium.properties"

    def reference(self, key: Literal["user", "password"]) -> str:
        if self.kind == "file":
            return f"${{file:{self.source}:{key}}}"
        return f"${{env:{self.source}{key.upper()}}}"


@dataclass(frozen=True, slots=True)
class ConnectorTarget:
    """The database the connector reads and the Kafka it writes its schema history to."""

    mysql_host: str = "127.0.0.1"
    mysql_port: int = 3306
    database: str = "searchsync"
    server_id: int = 184054  # its replica id: unique among everything replicating the server
    topic_prefix: str = "searchsync"  # unique per connector on the Kafka cluster
    schema_history_topic: str = "searchsync.schema-history"
    kafka_bootstrap: str = "127.0.0.1:9092"
    topic_template: str = "outbox.event.{type}"  # the outbox topic of a type, as the relay's


def outbox_connector_config(target: ConnectorTarget, credentials: Credentials) -> dict[str, str]:
    return {
        "connector.class": "io.debezium.connector.mariadb.MariaDbConnector",
        "tasks.max": "1",
        "database.hostname": target.mysql_host,
        "database.port": str(target.mysql_port),
        "database.user": credentials.reference("user"),
        "database.password": credentials.reference("password"),
        "database.server.id": str(target.server_id),
        "database.ssl.mode": "disable",
        "topic.prefix": target.topic_prefix,
        "database.include.list": target.database,
        "table.include.list": f"{target.database}.search_outbox",
        "include.schema.changes": "false",
        "snapshot.mode": "no_data",
        "schema.history.internal.kafka.bootstrap.servers": target.kafka_bootstrap,
        "schema.history.internal.kafka.topic": target.schema_history_topic,
        "schema.history.internal.store.only.captured.tables.ddl": "true",
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


def worker_provider_lines(kind: ProviderKind) -> list[str]:
    """The worker properties that declare the config provider `kind` (a connector cannot declare one
    itself)."""
    return [f"config.providers={kind}", f"config.providers.{kind}.class={_PROVIDER_CLASSES[kind]}"]
