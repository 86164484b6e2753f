"""`repair_rotation_finished_timestamp_seconds`: set by a complete rotation only, so the
SearchsyncRepairStale alert sees a wheel whose every tick stops."""

from __future__ import annotations

import time

from searchsync.observability.repair_metrics import RepairMetrics
from searchsync.ops.repair.model import RotationReport
from searchsync.ops.repair.wheel import record

NAME = "repair_rotation_finished_timestamp_seconds"


def test_only_a_complete_rotation_sets_the_finished_time() -> None:
    metrics = RepairMetrics()
    record(metrics, RotationReport(stopped="the live lag stayed above 10000"))
    assert metrics.registry.get_sample_value(NAME) == 0  # never finished
    before = time.time()
    record(metrics, RotationReport())
    finished = metrics.registry.get_sample_value(NAME)
    assert finished is not None and before <= finished <= time.time()
    record(metrics, RotationReport(stopped="again"))
    assert metrics.registry.get_sample_value(NAME) == finished
