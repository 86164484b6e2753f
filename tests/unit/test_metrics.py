"""Metrics: every name exported, rolling windows exact, a private registry per instance."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from searchsync.errors import ErrorCode
from searchsync.observability.metrics import Metrics
from searchsync.observability.names import ITEM_KINDS, METRIC_NAMES, item_kind
from searchsync.observability.rolling import DEFAULT_WINDOW, RollingKinds, RollingQuantiles


def _value(m: Metrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_every_name_is_exported_once() -> None:
    text = Metrics().render().decode()
    types = dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE"))
    for name in METRIC_NAMES:
        if f"{name}_total" in types:
            assert types[f"{name}_total"] == "counter", name
        else:
            assert types.get(name) in ("gauge", "histogram"), name
    assert len(set(METRIC_NAMES)) == len(METRIC_NAMES)


def test_counters_have_total_suffix_and_labels() -> None:
    m = Metrics()
    m.consumed("t", 3)
    m.event_outcome("wiki_page", "applied", 2)
    m.retry("wiki_page", "ES_429")
    m.dead("wiki_page", "BAD_JSON")
    m.poison("BAD_JSON")
    m.revision_regression("wiki_page")
    m.commit(True)
    m.commit(False)
    m.commit(False)
    m.tombstone()
    assert _value(m, "searchsync_events_consumed_total", topic="t") == 3
    assert (
        _value(m, "searchsync_event_outcomes_total", aggregate_type="wiki_page", result="applied")
        == 2
    )
    assert _value(m, "outbox_retry_total", aggregate_type="wiki_page", code="ES_429") == 1
    assert _value(m, "outbox_dead_total", aggregate_type="wiki_page", code="BAD_JSON") == 1
    assert _value(m, "searchsync_poison_messages_total", code="BAD_JSON") == 1
    assert _value(m, "searchsync_revision_regression_total", aggregate_type="wiki_page") == 1
    assert _value(m, "searchsync_commits_total", result="ok") == 1
    assert _value(m, "searchsync_commits_total", result="failed") == 2
    assert _value(m, "es_tombstone_written_total") == 1


def test_unknown_labels_values_are_refused() -> None:
    m = Metrics()
    with pytest.raises(ValueError, match="unknown event result"):
        m.event_outcome("wiki_page", "indexed")
    with pytest.raises(ValueError, match="unknown bulk item kind"):
        m.observe_item("409")


def test_item_counters_and_rates() -> None:
    m, quarter = Metrics(), DEFAULT_WINDOW // 4
    empty = _value(m, "es_bulk_item_success_rate")
    assert empty is not None and math.isnan(empty)  # no data is not a 0 % success rate
    m.observe_item("success", 2 * quarter)
    m.observe_item("429", quarter)
    m.observe_item("version_conflict", quarter)
    assert _value(m, "es_bulk_item_success_rate") == 0.5
    assert _value(m, "es_bulk_item_429_rate") == 0.25
    assert _value(m, "es_version_conflict_rate") == 0.25
    m.observe_item("mapping_error", 2 * quarter)  # pushes the successes out of the window
    assert _value(m, "es_bulk_item_success_rate") == 0.0
    assert _value(m, "es_mapping_error_rate") == 0.5
    assert _value(m, "es_bulk_item_success_total") == 2 * quarter
    assert _value(m, "es_mapping_error_total") == 2 * quarter
    assert _value(m, "es_version_conflict_total") == quarter


def test_latency_histogram_and_quantiles() -> None:
    m = Metrics()
    assert math.isnan(m.latencies.quantile(0.5))
    for i in range(DEFAULT_WINDOW):  # 0.01 .. 1.00, each as often
        m.bulk_done(10, (i % 100 + 1) / 100)
    assert _value(m, "es_write_latency_seconds_count") == DEFAULT_WINDOW
    assert _value(m, "es_write_latency_p50") == pytest.approx(0.50)
    assert _value(m, "es_write_latency_p95") == pytest.approx(0.95)
    assert _value(m, "es_write_latency_p99") == pytest.approx(0.99)


def test_gauges_and_forget_partition() -> None:
    m = Metrics()
    m.set_pending(7)
    m.set_processing(3)
    m.set_oldest_pending_age(1.5)
    m.set_assigned(3)
    m.set_paused(1)
    m.revision_lag("wiki_page", 4)
    m.set_lag("t", 0, 12)
    m.set_lag("t", 1, 5)
    m.commit_to_searchable(-2.0)  # clock skew is clamped, not a negative observation
    assert _value(m, "searchsync_member_pending_events") == 7
    assert _value(m, "searchsync_member_keys_in_flight") == 3
    assert _value(m, "searchsync_member_oldest_pending_age_seconds") == 1.5
    assert _value(m, "searchsync_dlq_budget_spent") == 0
    m.dlq_budget_spent()
    assert _value(m, "searchsync_dlq_budget_spent") == 1
    assert _value(m, "searchsync_partitions_assigned") == 3
    assert _value(m, "searchsync_partitions_paused") == 1
    assert _value(m, "projection_revision_lag", aggregate_type="wiki_page") == 4
    assert _value(m, "searchsync_commit_to_searchable_seconds_sum") == 0.0
    assert _value(m, "searchsync_consumer_lag", topic="t", partition="0") == 12
    m.forget_partition("t", 0)
    m.forget_partition("t", 9)  # never set: no error
    assert _value(m, "searchsync_consumer_lag", topic="t", partition="0") is None
    assert _value(m, "searchsync_consumer_lag", topic="t", partition="1") == 5


def test_private_registries_do_not_clash() -> None:
    a, b = Metrics(), Metrics()
    a.tombstone()
    assert _value(b, "es_tombstone_written_total") == 0
    assert REGISTRY.get_sample_value("es_tombstone_written_total") is None


@pytest.mark.parametrize(
    ("kind", "code", "expected"),
    [
        ("APPLIED", None, "success"),
        ("ALREADY_APPLIED", ErrorCode.ES_409, "version_conflict"),
        ("AHEAD", ErrorCode.ES_409, "version_conflict"),
        ("FAILED", ErrorCode.ES_429, "429"),
        ("FAILED", ErrorCode.ES_5XX, "5xx"),
        ("FAILED", ErrorCode.MAPPING_ERROR, "mapping_error"),
        ("FAILED", ErrorCode.ES_TIMEOUT, "other"),
    ],
)
def test_item_kind_mapping(kind: str, code: ErrorCode | None, expected: str) -> None:
    assert item_kind(kind, code) == expected
    assert expected in ITEM_KINDS


@given(st.lists(st.sampled_from(ITEM_KINDS), max_size=60), st.integers(1, 20))
def test_rolling_kinds_matches_a_plain_slice(kinds: list[str], size: int) -> None:
    window = RollingKinds(size)
    for kind in kinds:
        window.add(kind)
    tail = kinds[-size:]
    for kind in ITEM_KINDS:
        if not tail:
            assert math.isnan(window.rate(kind))
        else:
            assert window.rate(kind) == pytest.approx(tail.count(kind) / len(tail))


@given(
    st.lists(st.sampled_from(ITEM_KINDS[:2]), max_size=10), st.integers(0, 30), st.integers(1, 8)
)
def test_rolling_kinds_bulk_add_equals_repeated_add(before: list[str], n: int, size: int) -> None:
    one, many = RollingKinds(size), RollingKinds(size)
    for kind in before:
        one.add(kind)
        many.add(kind)
    one.add("other", n)
    for _ in range(n):
        many.add("other")
    assert len(one) == len(many)
    assert one.rate("other") == many.rate("other") or (
        math.isnan(one.rate("other")) and math.isnan(many.rate("other"))
    )


@given(
    st.lists(st.floats(0, 100, allow_nan=False), min_size=1, max_size=50),
    st.integers(1, 20),
    st.sampled_from([0.5, 0.95, 0.99, 1.0]),
)
def test_rolling_quantile_is_nearest_rank_of_the_tail(
    values: list[float], size: int, q: float
) -> None:
    window = RollingQuantiles(size)
    for v in values:
        window.add(v)
    tail = sorted(values[-size:])
    got = window.quantile(q)
    assert got in tail
    at_or_below = sum(1 for v in tail if v <= got)
    assert at_or_below / len(tail) >= q - 1e-12
    below = sum(1 for v in tail if v < got)
    assert below / len(tail) < q


def test_window_sizes_are_checked() -> None:
    with pytest.raises(ValueError):
        RollingKinds(0)
    with pytest.raises(ValueError):
        RollingQuantiles(0)
    with pytest.raises(ValueError):
        RollingQuantiles(5).quantile(0.0)
