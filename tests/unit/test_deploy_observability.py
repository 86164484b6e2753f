"""The Grafana dashboard and the Prometheus alert rules in deploy/ name only metrics that exist.

Each PromQL expression is reduced to the metric names it reads (label matchers, grouping clauses,
ranges, strings, functions and keywords removed) and every name must be exported: by the consumer
(`Metrics().registry`), by the rebuild (`RebuildMetrics().registry`), by `searchsync exporter`
(`ExporterMetrics`), by the repair (`RepairMetrics`), by the relay (`RelayMetrics`), or, for
Kafka Connect's connector state, by the JMX exporter rule shipped next to the alerts. The rules
file is also checked against the shape Prometheus loads (groups of rules with alert, expr, for,
labels and annotations); tests/unit/test_alert_rules.py runs `promtool` on them too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from prometheus_client import CollectorRegistry
from searchsync.observability.metrics import Metrics
from searchsync.observability.names import METRIC_NAMES
from searchsync.observability.rebuild_metrics import RebuildMetrics
from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.relay.relay import RelayMetrics
from searchsync.watch.exporter import ExporterMetrics

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "searchsync.json"
RULES = DEPLOY / "prometheus" / "searchsync-alerts.yml"
JMX_RULES = DEPLOY / "prometheus" / "connect-jmx-exporter.yml"

_KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool"}
    | {"offset", "inf", "nan"}
)
_DURATION = re.compile(r"[0-9]+(ms|s|m|h|d|w|y)")


def exported(registry: CollectorRegistry) -> dict[str, str]:
    """Every series name a registry exports, with its family's type (labelled or not)."""
    names: dict[str, str] = {}
    for family in registry.collect():
        if family.type == "counter":
            names[f"{family.name}_total"] = "counter"
        elif family.type == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                names[family.name + suffix] = "histogram"
        else:
            names[family.name] = family.type
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", text)  # grouping labels
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges and subqueries
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?", text):
        word, call = match.group(0).rstrip("( \t"), match.group(1)
        if call or word.lower() in _KEYWORDS or _DURATION.fullmatch(word):
            continue
        names.add(word)
    return names


def _rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def _dashboard_exprs() -> list[str]:
    dashboard = orjson.loads(DASHBOARD.read_bytes())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def _external() -> set[str]:
    """Series the JMX exporter rules make out of Kafka Connect's MBeans, and Prometheus' own
    ``up`` of each scrape target."""
    document = yaml.safe_load(JMX_RULES.read_text())
    return {rule["name"] for rule in document["rules"]} | {"up"}


def _known() -> dict[str, str]:
    return {
        **exported(Metrics().registry),
        **exported(RebuildMetrics().registry),
        **exported(ExporterMetrics(1, canary=True).registry),
        **exported(RepairMetrics().registry),
        **exported(RelayMetrics().registry),
    }


# The live pipeline's metric families (docs/design.md, Metrics): names users' dashboards and alerts
# query, so a rename or a loss is a breaking change this list catches.
_LIVE_FAMILIES = frozenset(
    (
        "alias_current_physical_index",
        "es_bulk_item_429",
        "es_bulk_item_429_rate",
        "es_bulk_item_5xx",
        "es_bulk_item_success",
        "es_bulk_item_success_rate",
        "es_mapping_error",
        "es_mapping_error_rate",
        "es_tombstone_written",
        "es_version_conflict",
        "es_version_conflict_rate",
        "es_write_latency_p50",
        "es_write_latency_p95",
        "es_write_latency_p99",
        "es_write_latency_seconds",
        "outbox_dead",
        "outbox_retry",
        "projection_revision_lag",
        "searchsync_commit_to_searchable_seconds",
        "searchsync_commits",
        "searchsync_connector_task_restarts",
        "searchsync_consumer_lag",
        "searchsync_dlq_budget_spent",
        "searchsync_event_outcomes",
        "searchsync_events_consumed",
        "searchsync_fanout_jobs",
        "searchsync_fanout_rebuilds",
        "searchsync_member_keys_in_flight",
        "searchsync_member_oldest_pending_age_seconds",
        "searchsync_member_pending_events",
        "searchsync_partition_blocked",
        "searchsync_partition_lineage_mismatch",
        "searchsync_partition_gap_records",
        "searchsync_partitions_assigned",
        "searchsync_partitions_paused",
        "searchsync_poison_messages",
        "searchsync_revision_regression",
        "searchsync_schema_fenced",
        "searchsync_severe_lag_threshold_seconds",
    )
)


def test_the_registries_export_what_metric_names_lists() -> None:
    families = {f.name for f in Metrics().registry.collect()}
    assert families == set(METRIC_NAMES) == _LIVE_FAMILIES


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (code) (rate(outbox_dead_total{code="X"}[5m]))', {"outbox_dead_total"}),
        ("histogram_quantile(0.99, sum by (le) (rate(a_bucket[5m]))) > 2", {"a_bucket"}),
        ('max(a) < 1 or absent(b{status="running"})', {"a", "b"}),
        ("delta(a[15m]) > 0 and on (topic) b", {"a", "b"}),
    ],
)
def test_metric_names_are_read_out_of_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_every_metric_the_dashboard_names_exists() -> None:
    exprs = _dashboard_exprs()
    assert len(exprs) >= 20
    named = set().union(*(metric_names(e) for e in exprs))
    assert named - set(_known()) == set()
    for must in (
        "searchsync_consumer_lag",
        "searchsync_events_consumed_total",
        "searchsync_event_outcomes_total",
        "es_bulk_item_429_total",
        "es_bulk_item_5xx_total",
        "es_mapping_error_total",
        "es_version_conflict_total",
        "outbox_dead_total",
        "searchsync_commit_to_searchable_seconds_bucket",
        "searchsync_partitions_paused",
        "searchsync_schema_fenced",
        "alias_current_physical_index",
        "reindex_scanned_total",
        "reindex_indexed_total",
        "reindex_failed_total",
        "reindex_incremental_lag",
        "v1_v2_query_diff_rate",
    ):
        assert must in named, must


def test_every_metric_the_alert_rules_name_exists() -> None:
    named = set().union(*(metric_names(r["expr"]) for r in _rules()))
    known = set(_known()) | _external()
    assert named - known == set()
    assert "kafka_connect_connector_status" in named & _external()


def test_the_alert_rules_have_the_shape_prometheus_loads() -> None:
    document = yaml.safe_load(RULES.read_text())
    assert set(document) == {"groups"}
    names = set()
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["name"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rule["alert"])
            assert rule["alert"] not in names
            names.add(rule["alert"])
            expr = rule["expr"]
            assert isinstance(expr, str) and expr.count("(") == expr.count(")")
            if "for" in rule:
                assert _DURATION.fullmatch(rule["for"]), rule["for"]
            assert rule["labels"]["severity"] in {"warning", "critical"}
            assert rule["annotations"]["summary"]
    assert {
        "SearchsyncConsumerLagGrowing",
        "SearchsyncDeadLettersGrowing",
        "SearchsyncRevisionRegression",
        "SearchsyncSchemaFenced",
        "SearchsyncPartitionsPaused",
        "SearchsyncConnectorNotRunning",
        "SearchsyncConnectorTaskNotRunning",
        "SearchsyncConnectorStatusAbsent",
        "SearchsyncMemberDown",
        "SearchsyncGroupDead",
        "SearchsyncCommitToSearchableSlow",
        "SearchsyncGroupAbsent",
        "SearchsyncGroupUnderstaffed",
        "SearchsyncExporterDown",
        "SearchsyncCanaryStale",
        "SearchsyncDlqBudgetSpent",
        "SearchsyncSevereLag",
    } <= names


def test_the_dashboard_panels_are_well_formed() -> None:
    dashboard = orjson.loads(DASHBOARD.read_bytes())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        for target in panel.get("targets", []):
            assert target["expr"].count("(") == target["expr"].count(")")
