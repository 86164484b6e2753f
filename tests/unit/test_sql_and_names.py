"""SQL is parameterised and every name from config is checked before use (docs/security.md).

- The SQL audit reads every module of ``consumer/`` and finds each piece of SQL text built at run
  time (an f-string, a ``+`` or a ``%`` with SQL keywords in its literal part). Values always go
  as parameters (``%s``); what may be interpolated is listed here with the reason it is safe, so
  a new interpolation fails this test until someone has looked at it. ``%``-formatting and
  ``.format`` of SQL are refused outright.
- Hypothesis: identifiers (`quote_identifier`, a projector's `table`) and the names read from
  config (index prefix, topics, the DLQ topic, the group, the database, the topic template, the
  connector) are accepted exactly when they match their strict pattern; anything else is a
  `ConfigError` naming the key and the expected form.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from searchsync import naming
from searchsync.config import load_settings
from searchsync.errors import ConfigError
from searchsync.mysql.pool import quote_identifier
from searchsync.mysql.schema import violations
from searchsync.naming import IDENTIFIER
from searchsync.projection import Projector, default_registry

ROOT = Path(__file__).resolve().parents[2]
_SQL = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP|GRANT|FROM|WHERE)\b")

# (module, interpolated expression) -> why it cannot carry a value or a name from outside
REVIEWED: dict[tuple[str, str], str] = {
    ("consumer/searchsync/mysql/projection_state.py", "_NEWER"): "a constant SQL fragment",
    ("consumer/searchsync/mysql/fanout.py", "newer"): "a constant SQL fragment",
    ("consumer/searchsync/mysql/fanout.py", "free"): "a constant SQL fragment",
    ("consumer/searchsync/mysql/fanout.py", "_UNCHANGED"): "a constant SQL fragment",
    ("consumer/searchsync/mysql/fanout_dependents.py", "table_q"): "Projector.table, quoted",
    ("consumer/searchsync/mysql/fanout_dependents.py", "via_q"): "Lookup.via, quoted",
    ("consumer/searchsync/mysql/fanout_dependents.py", "child_q"): "Child.table, quoted",
    ("consumer/searchsync/mysql/fanout_dependents.py", "key"): "'c.' and Child.key, quoted",
    ("consumer/searchsync/mysql/fanout_dependents.py", "key_q"): "Projector.id_column, quoted",
    ("consumer/searchsync/mysql/fanout_dependents.py", "rev_q"): (
        "Projector.revision_column, quoted"
    ),
    ("consumer/searchsync/mysql/fanout_dependents.py", "hint"): (
        "'' or FORCE INDEX (an IDENTIFIER-checked index name, quoted)"
    ),
    ("consumer/searchsync/mysql/projection_state.py", "placeholders"): "only '(%s, ...)' groups",
    ("consumer/searchsync/mysql/projection_state.py", "_UPSERT_TAIL"): "a constant SQL fragment",
    ("consumer/searchsync/mysql/truth.py", "columns"): "quote_identifier of validated columns",
    (
        "consumer/searchsync/mysql/truth.py",
        "quote_identifier(projector.table)",
    ): "validated and quoted",
    ("consumer/searchsync/mysql/truth.py", "select"): "_select(): quote_identifier only",
    (
        "consumer/searchsync/mysql/truth.py",
        "quote_identifier(projector.id_column)",
    ): "validated and quoted",
    ("consumer/searchsync/mysql/truth.py", "key"): "quote_identifier(projector.id_column)",
    (
        "consumer/searchsync/mysql/truth_buckets.py",
        "quote_identifier(projector.table)",
    ): "validated and quoted",
    ("consumer/searchsync/mysql/truth.py", "table"): "quote_identifier(projector.table)",
    ("consumer/searchsync/mysql/truth.py", "where_clause(conditions)"): (
        "key_scope.scope_sql: '`id` > %s' conditions and the operator's --where, checked by "
        "check_where (one condition, no ';' or comments) and parenthesized"
    ),
    ("consumer/searchsync/mysql/key_scope.py", "' AND '.join(conditions)"): (
        "scope_sql's conditions (see truth.py's where_clause)"
    ),
    **{
        ("consumer/searchsync/ops/rebuild/records.py", name): why
        for name, why in {
            "self._table": "a constant table name (the rebuild's or the load's state)",
            "self._names": "backticked column names of a record dataclass's fields",
            "self._marks": "placeholders",
            "self._sets": "backticked constant column names with %s",
            "where": "the stores' constant conditions with %s",
            "match": "backticked constant key column names with %s",
        }.items()
    },
    ("consumer/searchsync/mysql/truth_relations.py", "select"): "_quoted() columns",
    ("consumer/searchsync/mysql/truth_relations.py", "table"): "_quoted() table",
    ("consumer/searchsync/mysql/truth_relations.py", "key"): "_quoted() column",
    ("consumer/searchsync/mysql/truth_relations.py", "quoted"): "_quoted() table",
    ("consumer/searchsync/mysql/truth_relations.py", "column"): "_quoted() column",
    ("consumer/searchsync/mysql/truth_relations.py", "_json_object(child)"): (
        "JSON_OBJECT of the child's validated identifiers: literal keys, quoted columns"
    ),
    (
        "consumer/searchsync/mysql/truth_buckets.py",
        "select",
    ): "backticked Projector columns (validated)",
    (
        "consumer/searchsync/mysql/truth_buckets.py",
        "projector.table",
    ): "Projector.table (validated)",
    (
        "consumer/searchsync/mysql/truth_buckets.py",
        "where",
    ): "constant conditions with %s parameters",
    ("consumer/searchsync/mysql/truth_buckets.py", "key"): "one of two constant expressions",
    ("consumer/searchsync/mysql/truth_buckets.py", "state"): (
        "SoftDeleteState.expression: a constant IF over the quoted column, the cutoff a %s"
    ),
    ("consumer/searchsync/mysql/truth_buckets.py", "order"): "one of two constant ORDER BY lists",
    (
        "consumer/searchsync/mysql/truth_buckets.py",
        "src",
    ): "validated table, constant conditions, %s",
    ("consumer/searchsync/dlq/replays.py", "', '.join(_COLUMNS)"): "constant column names",
    (
        "consumer/searchsync/dlq/replays.py",
        "', '.join(['%s'] * len(_COLUMNS))",
    ): "placeholders",
    **{
        ("consumer/searchsync/writer/_plan.py", f"quote_identifier(table.{name})"): (
            "AggregateTable names, validated and quoted"
        )
        for name in ("table", "id_column", "revision_column", "deleted_at_column")
    },
    ("consumer/searchsync/writer/_plan.py", "columns"): "quote_identifier'd column names",
    ("consumer/searchsync/writer/_plan.py", "marks"): "placeholders",
    ("consumer/searchsync/writer/_plan.py", "sets"): "quote_identifier'd 'column = %s' fragments",
    ("consumer/searchsync/mysql/outbox.py", "only"): "one constant condition or nothing",
    ("consumer/searchsync/relay/mysql_store.py", "t"): "quote_identifier(relay.table)",
    ("consumer/searchsync/relay/mysql_store.py", "self._table"): "quote_identifier(relay.table)",
    ("consumer/searchsync/relay/mysql_store.py", "_COLUMNS"): "constant column names",
    ("consumer/searchsync/mysql/schema.py", "privileges"): "constant privilege lists",
    (
        "consumer/searchsync/mysql/dialect.py",
        "setting",
    ): "a constant name = a checked positive integer",
    ("consumer/searchsync/mysql/dialect.py", "sql[len('SELECT '):]"): (
        "the caller's SELECT, itself built from reviewed text"
    ),
    ("consumer/searchsync/mysql/dialect.py", "sql[:40]"): "an error message, never sent",
    ("consumer/searchsync/mysql/schema.py", "target"): "'*.*' or IDENTIFIER-checked names",
    ("consumer/searchsync/mysql/schema.py", "account"): "user and host without quotes",
}


def _literal(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_literal(v) for v in node.values)
    return ""


def _interpolations(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, kind, expression) of every run-time piece of SQL text in `tree`."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and _SQL.search(_literal(node)):
            for value in node.values:
                if isinstance(value, ast.FormattedValue):
                    found.append((node.lineno, "f-string", ast.unparse(value.value)))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
            sides = (node.left, node.right)
            if any(_SQL.search(_literal(side)) for side in sides):
                if isinstance(node.op, ast.Mod):
                    found.append((node.lineno, "%-format", ast.unparse(node)))
                    continue
                for side in sides:
                    if not isinstance(side, ast.Constant | ast.JoinedStr):
                        found.append((node.lineno, "+", ast.unparse(side)))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and _SQL.search(_literal(node.func.value))
        ):
            found.append((node.lineno, ".format", ast.unparse(node)))
    return found


def test_every_interpolation_into_sql_is_reviewed() -> None:
    unreviewed = []
    seen = set()
    for path in sorted((ROOT / "consumer").rglob("*.py")):
        module = path.relative_to(ROOT).as_posix()
        for line, kind, expression in _interpolations(ast.parse(path.read_text())):
            if kind in ("%-format", ".format") or (module, expression) not in REVIEWED:
                unreviewed.append(f"{module}:{line}: {kind} {expression}")
            seen.add((module, expression))
    assert unreviewed == [], "SQL built from unreviewed text:\n" + "\n".join(unreviewed)
    assert seen, "the audit found no SQL at all: it is not looking"


def test_the_audit_catches_a_value_in_sql_text() -> None:
    bad = ast.parse(
        'cur.execute(f"SELECT * FROM t WHERE id = {page_id}")\n'
        'cur.execute("DELETE FROM t WHERE id = %s" % page_id)\n'
        'cur.execute("UPDATE t SET a = 1 WHERE id = " + page_id)\n'
        'cur.execute("SELECT {} FROM t".format(column))\n'
    )
    kinds = [kind for _, kind, _ in _interpolations(bad)]
    assert kinds == ["f-string", "%-format", "+", ".format"]


_SAFE_NAME = st.from_regex(IDENTIFIER, fullmatch=True)


@given(st.one_of(st.text(max_size=70), _SAFE_NAME))
def test_quote_identifier_accepts_exactly_plain_identifiers(name: str) -> None:
    if IDENTIFIER.fullmatch(name):
        assert quote_identifier(name) == f"`{name}`"
    else:
        with pytest.raises(ValueError):
            quote_identifier(name)


@given(st.one_of(st.text(max_size=70), _SAFE_NAME))
def test_a_projector_table_is_a_plain_identifier(table: str) -> None:
    base = default_registry().get("wiki_page")
    fields: dict[str, Any] = {
        "aggregate_type": base.aggregate_type,
        "schema_version": base.schema_version,
        "columns": base.columns,
        "build": base.build,
        "mapping": base.mapping,
    }
    if IDENTIFIER.fullmatch(table):
        assert Projector(table=table, **fields).table == table
    else:
        with pytest.raises(ValueError, match="table"):
            Projector(table=table, **fields)


_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_NAMES: list[tuple[str, str, re.Pattern[str]]] = [
    ("SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX", "elasticsearch.index_prefix", naming.INDEX_PREFIX),
    ("SEARCHSYNC_KAFKA_DLQ_TOPIC", "kafka.dlq_topic", _TOPIC),
    ("SEARCHSYNC_KAFKA_GROUP_ID", "kafka.group_id", re.compile(r"[A-Za-z0-9._-]{1,200}")),
    ("SEARCHSYNC_MYSQL_DATABASE", "mysql.database", re.compile(r"[A-Za-z0-9_$]{1,64}")),
    ("SEARCHSYNC_CONNECT_CONNECTOR", "connect.connector", _TOPIC),
]


def _candidates(pattern: re.Pattern[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=40),
        st.from_regex(pattern, fullmatch=True).filter(lambda s: len(s) <= 60),
        st.sampled_from(["a b", "x;DROP TABLE t", "../etc", "a`b", "UPPER", "-x", "_x", "."]),
    )


@pytest.mark.parametrize(("env", "key", "pattern"), _NAMES, ids=[k for _, k, _ in _NAMES])
@given(data=st.data())
def test_names_from_config_match_their_strict_pattern_or_are_refused(
    env: str, key: str, pattern: re.Pattern[str], data: st.DataObject
) -> None:
    value = data.draw(_candidates(pattern))
    try:
        settings = load_settings({env: value})
    except ConfigError as exc:
        assert exc.key in (key, "kafka.dlq_topic"), exc  # a group's derived DLQ topic too
        assert exc.expected
        return
    section, field = key.split(".")
    loaded = getattr(getattr(settings, section), field)
    assert pattern.fullmatch(loaded) and loaded == value.strip()
    if key != "kafka.group_id":  # a topic or a connector (a URL path segment)
        assert loaded not in (".", "..")
    if key == "elasticsearch.index_prefix":
        assert naming.check_index_name(settings.alias("wiki_page"))


@given(st.one_of(st.text(max_size=40), st.from_regex(_TOPIC, fullmatch=True)))
def test_topics_from_config_are_kafka_topic_names(topic: str) -> None:
    try:
        settings = load_settings({"SEARCHSYNC_KAFKA_TOPICS": topic})
    except ConfigError as exc:
        assert exc.key in ("kafka.topics", "kafka.dlq_topic")
        return
    for name in settings.kafka.topics:
        assert _TOPIC.fullmatch(name) and name not in (".", "..")


@given(st.text(max_size=40))
def test_the_topic_template_needs_type_and_a_topic_shape(template: str) -> None:
    try:
        settings = load_settings({"SEARCHSYNC_REBUILD_TOPIC_TEMPLATE": template})
    except ConfigError as exc:
        assert exc.key == "rebuild.topic_template"
        return
    loaded = settings.rebuild.topic_template
    assert "{type}" in loaded and _TOPIC.fullmatch(loaded.replace("{type}", "wiki_page"))


def test_the_grant_check_reports_writes_and_ddl_on_business_tables_only() -> None:
    grants = [
        "GRANT USAGE ON *.* TO `c`@`%` IDENTIFIED BY PASSWORD '*ABCDEF'",
        "GRANT SELECT ON `app`.`wiki_page` TO `c`@`%`",
        "GRANT SELECT, INSERT, UPDATE, DELETE ON `app`.`search_projection_state` TO `c`@`%`",
        "GRANT SELECT, INSERT ON `other`.`wiki_page` TO `c`@`%`",
    ]
    assert violations(grants, "app", ["wiki_page"]) == []
    bad = [
        "GRANT UPDATE ON `app`.`wiki_page` TO `c`@`%`",
        "GRANT ALL PRIVILEGES ON `app`.* TO `c`@`%`",
        "GRANT ALTER, SELECT ON *.* TO `c`@`%` IDENTIFIED BY PASSWORD '*ABCDEF'",
        "GRANT SELECT ON `app`.`wiki_page` TO `c`@`%` WITH GRANT OPTION",
    ]
    found = violations(bad, "app", ["wiki_page"])
    assert [f.split(":")[0] for f in found] == [
        "UPDATE on app.wiki_page",
        "ALL PRIVILEGES on every table",
        "ALTER on every table",
        "GRANT OPTION on app.wiki_page",
    ]
    assert "*ABCDEF" not in str(found)
