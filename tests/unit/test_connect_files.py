"""`searchsync schema grants | connector --flavor mysql|mariadb` and the repository's ``connect/``
folder: each family's grants and connector class, ``database.ssl.mode`` in each connector's own
words, the heartbeat, the schema history clients secured as ``[kafka]`` (no secret printed), the
``--flavor`` default, and ``connect/outbox-<flavor>.json`` equal to what the CLI prints, filled in
the way deploy/local/connect.sh fills it (which the test runs)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from searchsync.cli import main
from searchsync.config import KafkaSettings
from searchsync.exit_codes import ExitCode
from searchsync.kafka.outbox_connector import (
    ConnectorTarget,
    Credentials,
    outbox_connector_config,
    worker_provider_lines,
)
from searchsync.mysql.dialect import FLAVORS, Flavor

from tests.connect_files import (
    CONNECT_DIR,
    PLACEHOLDER,
    connector_file,
    connector_template,
    fill,
    render,
)

ROOT = Path(__file__).resolve().parents[2]
CLASSES = {
    "mysql": "io.debezium.connector.mysql.MySqlConnector",
    "mariadb": "io.debezium.connector.mariadb.MariaDbConnector",
}


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(list(argv)) == ExitCode.OK
    return json.loads(capsys.readouterr().out)


def _cli_lines(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(list(argv)) == ExitCode.OK
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("flavor", FLAVORS)
def test_the_connect_folder_holds_what_the_cli_prints(flavor: Flavor) -> None:
    text = connector_file(flavor).read_text(encoding="utf-8")
    assert text == render(connector_template(flavor))
    placeholders = set(PLACEHOLDER.findall(text))
    assert placeholders == {
        "CONNECTOR_NAME",
        "MYSQL_HOST",
        "MYSQL_PORT",
        "MYSQL_DATABASE",
        "DEBEZIUM_SERVER_ID",
        "DEBEZIUM_TOPIC_PREFIX",
        "DEBEZIUM_SCHEMA_HISTORY_TOPIC",
        "KAFKA_BOOTSTRAP",
        "DEBEZIUM_SECRETS_FILE",
    }
    assert json.loads(text)["config"]["connector.class"] == CLASSES[flavor]


VALUES = {
    "CONNECTOR_NAME": "shop-outbox",
    "MYSQL_HOST": "db.internal",
    "MYSQL_PORT": "3307",
    "MYSQL_DATABASE": "shop",
    "DEBEZIUM_SERVER_ID": "4242",
    "DEBEZIUM_TOPIC_PREFIX": "shop-cdc",
    "DEBEZIUM_SCHEMA_HISTORY_TOPIC": "shop-cdc.history",
    "KAFKA_BOOTSTRAP": "kafka-1:9092",
    "DEBEZIUM_SECRETS_FILE": "/etc/connect/shop db.properties",
}


def _cli_connector(capsys: pytest.CaptureFixture[str], flavor: str) -> Any:
    v = VALUES
    return _cli_json(
        capsys,
        *("schema", "connector", "--flavor", flavor, "--mysql-host", v["MYSQL_HOST"]),
        *("--mysql-port", v["MYSQL_PORT"], "--database", v["MYSQL_DATABASE"]),
        *("--server-id", v["DEBEZIUM_SERVER_ID"], "--topic-prefix", v["DEBEZIUM_TOPIC_PREFIX"]),
        *("--schema-history-topic", v["DEBEZIUM_SCHEMA_HISTORY_TOPIC"]),
        *("--kafka-bootstrap", v["KAFKA_BOOTSTRAP"], "--secrets", v["DEBEZIUM_SECRETS_FILE"]),
    )


@pytest.mark.parametrize("flavor", FLAVORS)
def test_the_filled_in_file_is_the_cli_output_for_the_same_values(
    flavor: Flavor, capsys: pytest.CaptureFixture[str]
) -> None:
    filled = json.loads(fill(connector_file(flavor).read_text(encoding="utf-8"), VALUES))
    assert filled["name"] == "shop-outbox"
    assert filled["config"] == _cli_connector(capsys, flavor)
    assert not PLACEHOLDER.search(json.dumps(filled))


def test_the_local_stack_registers_the_mariadb_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``connect.sh config`` (it renders, it starts and changes nothing) equals the CLI."""
    env = {
        **os.environ,
        "STACK_DIR": str(tmp_path / "stack"),
        "KAFKA_PORT": "9092",
        **{
            k: v for k, v in VALUES.items() if k not in ("KAFKA_BOOTSTRAP", "DEBEZIUM_SECRETS_FILE")
        },
    }
    script = ROOT / "deploy" / "local" / "connect.sh"
    done = subprocess.run(
        ["bash", str(script), "config"], env=env, capture_output=True, text=True, check=True
    )
    rendered = json.loads(done.stdout)
    expected = _cli_connector(capsys, "mariadb")
    secrets = str(tmp_path / "stack" / "connect" / "debezium.properties")
    expected["database.user"] = f"${{file:{secrets}:user}}"
    expected["database.password"] = f"${{file:{secrets}:password}}"
    expected["schema.history.internal.kafka.bootstrap.servers"] = "127.0.0.1:9092"
    assert rendered == expected
    assert not (tmp_path / "stack").exists()  # it wrote nothing


def test_the_worker_properties_declare_the_provider_the_connector_names() -> None:
    lines = [
        line
        for line in (CONNECT_DIR / "worker.properties").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert lines[-2:] == worker_provider_lines("file")
    props = dict(line.split("=", 1) for line in lines)
    config = outbox_connector_config(ConnectorTarget(), Credentials())
    for key in ("key.converter", "value.converter", "value.converter.schemas.enable"):
        assert props[key] == config[key]
    assert set(PLACEHOLDER.findall("\n".join(lines))) == {
        "KAFKA_PORT",
        "CONNECT_GROUP_ID",
        "CONNECT_PORT",
        "DIST_DIR",
    }
    assert (CONNECT_DIR / "README.md").is_file()


@pytest.mark.parametrize(
    ("ssl_mode", "mysql", "mariadb"),
    [
        ("disabled", "disabled", "disable"),
        ("verify_ca", "verify_ca", "verify-ca"),
        ("verify_identity", "verify_identity", "verify-full"),
    ],
)
def test_database_ssl_mode_in_each_connectors_words(
    ssl_mode: str, mysql: str, mariadb: str
) -> None:
    for flavor, word in (("mysql", mysql), ("mariadb", mariadb)):
        target = ConnectorTarget(flavor=flavor, ssl_mode=ssl_mode)  # type: ignore[arg-type]
        config = outbox_connector_config(target, Credentials())
        assert config["database.ssl.mode"] == word
        assert config["connector.class"] == CLASSES[flavor]
        assert config["heartbeat.interval.ms"] == "10000"


def test_the_schema_history_clients_are_secured_as_kafka_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    for path in files.values():
        path.write_text("-----BEGIN-----\n")
    secret_values = ("sasl-Secret-9f1", "key-Secret-2c7")
    for key, value in {
        "SECURITY_PROTOCOL": "sasl_ssl",
        "SASL_MECHANISM": "SCRAM-SHA-512",
        "SASL_USERNAME": "searchsync-cdc",
        "SASL_PASSWORD": secret_values[0],
        "SSL_CA_LOCATION": str(files["ca"]),
        "SSL_CERTIFICATE_LOCATION": str(files["cert"]),
        "SSL_KEY_LOCATION": str(files["key"]),
        "SSL_KEY_PASSWORD": secret_values[1],
    }.items():
        monkeypatch.setenv(f"SEARCHSYNC_KAFKA_{key}", value)
    assert main(["schema", "connector", "--flavor", "mysql", "--provider", "env"]) == ExitCode.OK
    text = capsys.readouterr().out
    assert not [s for s in secret_values if s in text]
    config = json.loads(text)
    producer = {
        k.removeprefix("schema.history.internal.producer."): v
        for k, v in config.items()
        if k.startswith("schema.history.internal.producer.")
    }
    consumer = {
        k.removeprefix("schema.history.internal.consumer."): v
        for k, v in config.items()
        if k.startswith("schema.history.internal.consumer.")
    }
    assert (
        producer
        == consumer
        == {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required"
            ' username="searchsync-cdc" password="${env:DEBEZIUM_DB_KAFKA_PASSWORD}";',
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(files["ca"]),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": f"${{dir:{tmp_path}:cert.pem}}",
            "ssl.keystore.key": f"${{dir:{tmp_path}:key.pem}}",
            "ssl.key.password": "${env:DEBEZIUM_DB_KAFKA_KEY_PASSWORD}",
        }
    )
    lines = _cli_lines(capsys, "schema", "connector", "--worker-properties", "--provider", "env")
    assert lines[0] == "config.providers=env,dir"
    assert lines[2].endswith("=org.apache.kafka.common.config.provider.DirectoryConfigProvider")


def test_a_plain_kafka_is_named_plaintext_and_needs_no_second_provider() -> None:
    config = outbox_connector_config(ConnectorTarget(kafka=KafkaSettings()), Credentials())
    assert config["schema.history.internal.producer.security.protocol"] == "PLAINTEXT"
    assert config["schema.history.internal.consumer.security.protocol"] == "PLAINTEXT"
    assert not [k for k in config if k.startswith("schema.history.internal.producer.sasl")]
    assert worker_provider_lines("file") == [
        "config.providers=file",
        "config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
    ]


def test_the_family_comes_from_the_option_then_the_config_then_mariadb(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def debezium_grant(*extra: str) -> str:
        lines = _cli_lines(capsys, "schema", "grants", "--table", "product", *extra)
        (line,) = [x for x in lines if "'debezium'@" in x]
        return line

    def connector_class(*extra: str) -> str:
        return str(_cli_json(capsys, "schema", "connector", *extra)["connector.class"])

    assert "BINLOG MONITOR" in debezium_grant() and "REPLICATION CLIENT" not in debezium_grant()
    assert connector_class() == CLASSES["mariadb"]
    mysql_grant = debezium_grant("--flavor", "mysql")
    assert mysql_grant == (
        "GRANT SELECT, RELOAD, SHOW DATABASES, REPLICATION SLAVE, REPLICATION CLIENT"
        " ON *.* TO 'debezium'@'%';"
    )
    assert connector_class("--flavor", "mysql") == CLASSES["mysql"]

    monkeypatch.setenv("SEARCHSYNC_MYSQL_FLAVOR", "mysql")
    assert debezium_grant() == mysql_grant
    assert connector_class() == CLASSES["mysql"]
    assert "BINLOG MONITOR" in debezium_grant("--flavor", "mariadb")
    assert connector_class("--flavor", "mariadb") == CLASSES["mariadb"]

    monkeypatch.setenv("SEARCHSYNC_MYSQL_FLAVOR", "auto")
    assert connector_class() == CLASSES["mariadb"]
    assert main(["schema", "grants", "--flavor", "oracle"]) == ExitCode.USAGE
