"""The rebuild's metrics: every promised name is registered, and each method moves its series."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from searchsync.observability.rebuild_metrics import REBUILD_METRIC_NAMES, RebuildMetrics


def _samples(m: RebuildMetrics) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(m.render().decode()):
        for sample in family.samples:
            out[(sample.name, sample.labels.get("alias", ""))] = sample.value
    return out


def test_every_promised_name_is_registered() -> None:
    families = {f.name for f in text_string_to_metric_families(RebuildMetrics().render().decode())}
    assert set(REBUILD_METRIC_NAMES) <= families


def test_each_method_moves_its_own_series() -> None:
    m = RebuildMetrics()
    m.chunk("kb_wiki_page", scanned=5, indexed=6, failed=1)
    m.chunk("kb_wiki_page", scanned=2, indexed=0, failed=0)
    m.set("reindex_incremental_lag", "kb_wiki_page", 42)
    m.set("alias_current_physical_index", "kb_wiki_page", 2)
    m.set("v1_v2_query_diff_rate", "kb_wiki_page", 0.25)
    got = _samples(m)
    assert got[("reindex_scanned_total", "kb_wiki_page")] == 7
    assert got[("reindex_indexed_total", "kb_wiki_page")] == 6
    assert got[("reindex_failed_total", "kb_wiki_page")] == 1
    assert got[("reindex_incremental_lag", "kb_wiki_page")] == 42
    assert got[("alias_current_physical_index", "kb_wiki_page")] == 2
    assert got[("v1_v2_query_diff_rate", "kb_wiki_page")] == 0.25
