"""`searchsync config check`: the settings (redacted) and projectors as `run` loads them; with
``--grants``, exit 1 if a grant lets the consumer write a business table. `searchsync schema sql |
grants | connector`: print, connecting to nothing, searchsync's tables, the three users' GRANTs
and the Debezium connector's configuration (or ``--worker-properties``), docs/production.md;
``--flavor`` picks the server family (default: ``[mysql] flavor``, else mariadb). `searchsync
projection show`: what a projector makes of one row, as the sample of ``--connect`` does."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

import orjson

from searchsync.cli.args import chosen_type, command, group, positive_int, run_in, with_tables
from searchsync.cli.output import err, out, print_json
from searchsync.config import Settings
from searchsync.errors import InvalidRequest
from searchsync.exit_codes import ExitCode
from searchsync.kafka.outbox_connector import (
    ConnectorTarget,
    Credentials,
    outbox_connector_config,
    worker_provider_lines,
)
from searchsync.mysql.dialect import DEFAULT_FLAVOR, FLAVORS, Flavor, parse_flavor
from searchsync.mysql.schema import DbUsers, grant_statements, schema_sql
from searchsync.mysql.table_schema import MysqlTableSchema
from searchsync.ops import setup_check
from searchsync.ops.preview import preview
from searchsync.projection.references import business_tables, event_types
from searchsync.projection.topics import consumed_topics
from searchsync.runtime import Runtime
from searchsync.search.client import opensearch_client_class

_USERS = DbUsers()
_TARGET = ConnectorTarget()
_CREDENTIALS = Credentials()


def register(commands: Any) -> None:
    cmds = group(commands, "config", "check the configuration")
    check = command(cmds, "check", cmd_config_check, "validate and print the settings (redacted)")
    check.add_argument(
        "--grants",
        action="store_true",
        help="also check that the MySQL user cannot write the business tables (connects)",
    )
    check.add_argument(
        "--connect",
        action="store_true",
        help="also check the projectors' tables and columns in MySQL, project one row of each"
        " type and try each mapping on the search engine (connects)",
    )


def cmd_config_check(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    registry = runtime.registry  # a ConfigError (exit 2) when a projector cannot be loaded
    if settings.search.engine == "opensearch":
        opensearch_client_class()  # a ConfigError (exit 2) without the searchsync[opensearch] extra
    redacted: dict[str, Any] = {**settings.redacted(), "registered_types": list(registry.types())}
    report = None
    if args.grants:
        from searchsync.mysql.schema import check_grants

        tables = list(business_tables(runtime.registry))

        async def go() -> Any:
            return await check_grants(await runtime.pool(), settings.mysql.database, tables)

        report = run_in(runtime, go)
        redacted["grants"] = {"tables": tables, **asdict(report)}
    found = setup_check.static_findings(settings, registry)
    reports: list[setup_check.TypeReport] = []

    async def connected() -> None:  # the refusals that need MySQL and the search engine
        tables, admin = await runtime.tables(), runtime.search().admin
        schema = MysqlTableSchema(await runtime.pool())
        for t in registry.types():
            projector = registry.get(t)
            wrong = await setup_check.schema_findings(projector, schema)
            found.extend(wrong)
            if not wrong:  # a missing column would only fail the read
                sample = await setup_check.sample_report(projector, tables.truth)
                reports.append(sample)
                found.extend(sample.findings)
            prefix = settings.elasticsearch.index_prefix
            found.extend(await setup_check.engine_findings(projector, admin, prefix))

    if args.connect:
        run_in(runtime, connected)
    redacted["consumed_topics"] = list(consumed_topics(settings, event_types(registry)))
    redacted["findings"] = found
    if args.connect:
        redacted["types"] = [asdict(r) for r in reports]
    refused = report is not None and not report.ok  # found: a configuration that cannot work
    code = ExitCode.USAGE if found else ExitCode.FAILURE if refused else ExitCode.OK
    if args.json:
        print_json(redacted)
        return code
    for section, values in settings.redacted().items():
        for key, value in values.items():
            out(f"{section}.{key} = {orjson.dumps(value, default=str).decode()}")
    out(f"registered types: {', '.join(registry.types())}")
    if report is not None:
        out(*(f"grant: {grant}" for grant in report.grants))
        err(*(f"least privilege violated: {violation}" for violation in report.violations))
        out("least privilege: ok" if report.ok else "least privilege: VIOLATED")
    out(*setup_check.lines(reports))
    err(*(f"config refused: {finding}" for finding in found))
    out(f"config NOT ok: {len(found)} finding(s)" if found else "config ok")
    return code


def register_projection(commands: Any) -> None:
    cmds = group(commands, "projection", "what a projector makes of a row")
    showing = command(
        cmds,
        "show",
        cmd_projection_show,
        "print the document that would be written for one row (JSON)",
        json="print the document with its type, id, state and revision around it",
        one_type=True,
    )
    showing.add_argument("--id", required=True, help="the row's id")


def cmd_projection_show(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    """The document searchsync would write for one row (`searchsync.ops.preview`), as JSON. Exit 0
    with the document; 1 when there is none (the row cannot be projected, or neither the row nor its
    revision floor exists), the reason on stderr; 2 for an unknown type."""
    projector = runtime.registry.get(chosen_type(runtime, args.type))
    found = with_tables(runtime, lambda t: preview(projector, t.truth, args.id))
    if args.json:
        document = asdict(found)
        document["document"] = document.pop("body")
        print_json(document)
    elif found.body is not None:
        print_json(found.body)
    if not found.ok:
        err(f"{found.aggregate_type} {found.aggregate_id}: {found.state}: {found.reason}")
        return ExitCode.FAILURE
    return ExitCode.OK


def register_schema(commands: Any) -> None:
    cmds = group(commands, "schema", "print the MySQL schema, grants and connector")
    command(cmds, "sql", cmd_sql, "searchsync's own tables (every migration, in order)", json=None)
    about = "the GRANT statements of the three users"
    grants = command(cmds, "grants", cmd_grants, about, json=None)
    grants.add_argument("--database", help="the database (default: [mysql] database)")
    grants.add_argument("--consumer-user", help="default: [mysql] user")
    grants.add_argument("--app-user", default=_USERS.app, help=f"default: {_USERS.app}")
    grants.add_argument("--debezium-user", default=_USERS.debezium, help="default: %(default)s")
    grants.add_argument("--host", default=_USERS.host, help="the accounts' host part (default: %%)")
    grants.add_argument(
        "--table",
        action="append",
        help="a business table (repeat; default: the registered projectors' tables)",
    )
    _flavor_option(grants)
    about = "the Debezium connector's configuration (JSON)"
    conn = command(cmds, "connector", cmd_connector, about, json=None)
    _flavor_option(conn)
    conn.add_argument("--mysql-host", help="the host Connect reaches MySQL at (default: [mysql])")
    conn.add_argument("--mysql-port", type=positive_int, help="default: [mysql] port")
    conn.add_argument("--database", help="default: [mysql] database")
    conn.add_argument(
        "--server-id",
        type=positive_int,
        default=_TARGET.server_id,
        help="Debezium's replica id, unique among the server's replicas (default: %(default)s)",
    )
    conn.add_argument("--topic-prefix", default=_TARGET.topic_prefix, help="default: %(default)s")
    conn.add_argument(
        "--schema-history-topic", default=_TARGET.schema_history_topic, help="default: %(default)s"
    )
    conn.add_argument("--kafka-bootstrap", help="for the schema history (default: [kafka])")
    conn.add_argument(
        "--topic-template",
        help="the outbox topic of a type, with {type} (default: [relay] topic_template)",
    )
    conn.add_argument(
        "--provider",
        choices=("file", "env"),
        default=_CREDENTIALS.kind,
        help="the config provider the credentials come from (default: %(default)s)",
    )
    conn.add_argument(
        "--secrets",
        help="file: the properties file on the worker with user= and password= (default: "
        f"{_CREDENTIALS.source}); env: the variables' prefix (default: DEBEZIUM_DB_)",
    )
    conn.add_argument(
        "--worker-properties",
        action="store_true",
        help="print the worker lines that declare the provider instead",
    )


def _flavor_option(parser: Any) -> None:
    parser.add_argument(
        "--flavor",
        choices=FLAVORS,
        help=f"the server family (default: [mysql] flavor unless auto, else {DEFAULT_FLAVOR})",
    )


def _flavor(args: argparse.Namespace, settings: Settings) -> Flavor:
    """``--flavor``, else ``[mysql] flavor`` when it names one, else `DEFAULT_FLAVOR`."""
    chosen = args.flavor or settings.mysql.flavor
    return DEFAULT_FLAVOR if chosen == "auto" else parse_flavor(chosen)


def cmd_sql(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    out(schema_sql().rstrip())
    return ExitCode.OK


def cmd_grants(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    tables = args.table or list(business_tables(runtime.registry))
    users = DbUsers(
        consumer=args.consumer_user or settings.mysql.user,
        app=args.app_user,
        debezium=args.debezium_user,
        host=args.host,
    )
    database = args.database or settings.mysql.database
    out("-- Create the three accounts first, with passwords of your own (CREATE USER ...).")
    out(*grant_statements(database, tables, users, _flavor(args, settings)))
    return ExitCode.OK


def cmd_connector(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    kafka = settings.kafka
    if args.worker_properties:
        out(*worker_provider_lines(args.provider, files=kafka.ssl_certificate_location is not None))
        return ExitCode.OK
    mysql = settings.mysql
    target = ConnectorTarget(
        mysql_host=args.mysql_host or mysql.host,
        mysql_port=args.mysql_port or mysql.port,
        database=args.database or mysql.database,
        server_id=args.server_id,
        topic_prefix=args.topic_prefix,
        schema_history_topic=args.schema_history_topic,
        kafka_bootstrap=args.kafka_bootstrap or settings.kafka.bootstrap_servers,
        topic_template=args.topic_template or settings.relay.topic_template,
        flavor=_flavor(args, settings),
        ssl_mode=mysql.ssl_mode,
        kafka=kafka,
    )
    if "{type}" not in target.topic_template:
        raise InvalidRequest(f"--topic-template {target.topic_template!r}: want {{type}} in it")
    if args.provider == "file" and args.secrets and (":" in args.secrets or "}" in args.secrets):
        raise InvalidRequest(f"--secrets {args.secrets!r}: a file path without ':' or '}}'")
    default_source = _CREDENTIALS.source if args.provider == "file" else "DEBEZIUM_DB_"
    credentials = Credentials(kind=args.provider, source=args.secrets or default_source)
    try:
        config = outbox_connector_config(target, credentials)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    print_json(config)
    return ExitCode.OK
