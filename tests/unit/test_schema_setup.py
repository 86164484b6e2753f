"""`searchsync schema sql | grants | connector`: the packaged migrations are the repository's, the
grants keep the consumer read-only on business tables, the connector names its credentials only
through a config provider."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from searchsync.cli import main
from searchsync.examples import article
from searchsync.exit_codes import ExitCode
from searchsync.kafka.outbox_connector import (
    ConnectorTarget,
    Credentials,
    outbox_connector_config,
    worker_provider_lines,
)
from searchsync.mysql.schema import DbUsers, grant_statements, migrations, schema_sql, violations
from searchsync.projection import ProjectorRegistry
from searchsync.projection.references import business_tables
from searchsync.relay.port import OutboxEntry, router_record

from tests import catalog

ROOT = Path(__file__).resolve().parents[2]


def test_the_packaged_migrations_are_schemas_sql_in_order() -> None:
    files = sorted((ROOT / "schemas" / "sql").glob("[0-9]*.sql"))
    packaged = migrations()
    assert [m.name for m in packaged] == [f.name for f in files]
    assert [m.sql for m in packaged] == [f.read_text(encoding="utf-8") for f in files]
    assert packaged[0].name == "001_init.sql"


def test_the_own_schema_has_no_business_table() -> None:
    sql = schema_sql()
    created = re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)", sql)
    assert "search_outbox" in created and "search_projection_state" in created
    assert all(t.startswith("search_") for t in created), created  # wiki_page is the demo's
    assert all(f"-- migration {m.name}" in sql for m in migrations())
    demo = (ROOT / "schemas" / "sql" / "demo" / "wiki_page.sql").read_text(encoding="utf-8")
    assert "CREATE TABLE IF NOT EXISTS wiki_page" in demo


def _granted_to(lines: list[str], user: str) -> list[str]:
    return [line.rstrip(";") for line in lines if f" TO '{user}'@" in line]


def test_the_consumer_cannot_write_a_business_table_and_the_app_can() -> None:
    users = DbUsers(consumer="c", app="a", debezium="d", host="10.%")
    lines = grant_statements("shop", ["product", "search_canary", "product"], users)
    consumer, app = _granted_to(lines, "c"), _granted_to(lines, "a")
    assert violations(consumer, "shop", ["product"]) == []
    assert "GRANT SELECT ON `shop`.`product` TO 'c'@'10.%'" in consumer
    assert violations(app, "shop", ["product"])  # the application writes its own tables
    assert sum("`product`" in line for line in lines) == 2  # once per user, not repeated
    assert "GRANT SELECT, INSERT, UPDATE ON `shop`.`search_canary` TO 'c'@'10.%'" in consumer
    assert not [line for line in app if "search_canary" in line]  # own tables keep their grants
    (debezium,) = _granted_to(lines, "d")
    assert " ON *.* " in debezium and "REPLICATION SLAVE" in debezium
    claim = [line for line in consumer if line.startswith("GRANT UPDATE (")]
    assert claim and "payload" not in claim[0]  # the relay updates its claim, never an event


@pytest.mark.parametrize(
    ("database", "tables", "users"),
    [
        ("shop;drop", [], DbUsers()),
        ("shop", ["a b"], DbUsers()),
        ("shop", [], DbUsers(app="x'y")),
    ],
)
def test_grants_refuse_names_they_would_have_to_quote(
    database: str, tables: list[str], users: DbUsers
) -> None:
    with pytest.raises(ValueError):
        grant_statements(database, tables, users)


def test_the_connector_names_its_credentials_through_the_provider_only() -> None:
    target = ConnectorTarget(database="shop", server_id=7, topic_template="prod.{type}")
    config = outbox_connector_config(target, Credentials("file", "/etc/connect/db.properties"))
    assert config["database.user"] == "${file:/etc/connect/db.properties:user}"
    assert config["database.password"] == "${file:/etc/connect/db.properties:password}"
    placeholders = {v for v in config.values() if "${" in v}
    assert placeholders == {
        config["database.user"],
        config["database.password"],
        "prod.${routedByValue}",
    }
    assert config["table.include.list"] == "shop.search_outbox"
    assert config["database.server.id"] == "7"
    assert all(isinstance(v, str) for v in config.values())
    env = outbox_connector_config(target, Credentials("env", "DBZ_"))
    assert env["database.password"] == "${env:DBZ_PASSWORD}"
    assert worker_provider_lines("env") == [
        "config.providers=env",
        "config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    ]


def test_the_router_topic_is_the_relay_topic_of_the_same_template() -> None:
    template = "prod.{type}"
    config = outbox_connector_config(ConnectorTarget(topic_template=template), Credentials())
    entry = OutboxEntry(0, "e", "article", "a1", "UPSERT", 1, "{}", 0)
    routed = config["transforms.outbox.route.topic.replacement"]
    assert routed.replace("${routedByValue}", "article") == router_record(entry, template).topic


def test_the_cli_prints_all_three(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "sql"]) == ExitCode.OK
    assert capsys.readouterr().out.startswith("-- migration 001_init.sql")

    argv = ["schema", "grants", "--database", "shop", "--table", "product", "--host", "h"]
    assert main([*argv, "--consumer-user", "c"]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "GRANT SELECT ON `shop`.`product` TO 'c'@'h';" in out
    assert "TO 'searchsync_app'@'h'" in out and "TO 'debezium'@'h'" in out

    assert main(["schema", "connector", "--database", "shop", "--server-id", "9"]) == ExitCode.OK
    config = json.loads(capsys.readouterr().out)
    assert config["database.include.list"] == "shop" and config["database.server.id"] == "9"
    assert config["database.user"].startswith("${file:")

    assert main(["schema", "connector", "--worker-properties"]) == ExitCode.OK
    assert capsys.readouterr().out.splitlines() == worker_provider_lines("file")

    assert main(["schema", "connector", "--topic-template", "no-type"]) == ExitCode.USAGE
    assert main(["schema", "connector", "--secrets", "C:/x"]) == ExitCode.USAGE


def test_the_local_stack_keeps_no_second_copy() -> None:
    migrate = (ROOT / "deploy" / "local" / "migrate.sh").read_text(encoding="utf-8")
    connect = (ROOT / "deploy" / "local" / "connect.sh").read_text(encoding="utf-8")
    assert "GRANT" not in migrate and "schema grants" in migrate
    assert "MariaDbConnector" not in connect and "bootstrap.servers" not in connect
    assert "connect/outbox-mariadb.json" in connect and "/worker.properties" in connect


def test_grants_cover_every_table_a_projector_reads() -> None:
    registry = ProjectorRegistry()
    registry.register(article.projector())
    registry.register(catalog.projector())
    tables = business_tables(registry)
    # the roots, the child tables and the lookup tables, each once
    assert tables == ("article", "article_tag", "author", *sorted(catalog.tables()))
    statements = grant_statements("shop", list(tables), DbUsers(consumer="c", host="h"))
    for table in tables:
        assert f"GRANT SELECT ON `shop`.`{table}` TO 'c'@'h';" in statements
