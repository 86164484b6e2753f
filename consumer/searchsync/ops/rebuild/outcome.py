"""What `searchsync rebuild` is asked to do, and what came of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from searchsync.ops.rebuild.plan import Plan
from searchsync.ops.rebuild.state import RebuildRecord
from searchsync.ops.rebuild.verify import VerifyReport

__all__ = ["RebuildOptions", "RebuildOutcome", "record_summary"]


@dataclass(frozen=True, slots=True)
class RebuildOptions:
    aggregate_type: str
    resume: bool = False
    abandon: bool = False
    dry_run: bool = False
    wait_for_live: bool = True
    stop_after_chunks: int | None = None  # drills and tests: stop as if killed after K chunks


@dataclass(slots=True)
class RebuildOutcome:
    ok: bool
    action: str  # planned, done, refused, interrupted, abandoned, waiting
    message: str
    record: RebuildRecord | None = None
    plan: Plan | None = None
    verify: VerifyReport | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        r = self.record
        return {
            "ok": self.ok,
            "action": self.action,
            "message": self.message,
            "plan": None if self.plan is None else self.plan.summary(),
            "rebuild": None if r is None else record_summary(r),
            "verify": None if self.verify is None else self.verify.summary(),
            "failures": [{"id": i, "why": w} for i, w in self.failures],
        }


def record_summary(r: RebuildRecord) -> dict[str, Any]:
    return {
        "rebuild_id": r.rebuild_id,
        "aggregate_type": r.aggregate_type,
        "alias": r.alias,
        "source_index": r.source_index,
        "target_index": r.target_index,
        "schema_version": r.schema_version,
        "catchup_group": r.catchup_group,
        "watermark": {f"{t}/{p}": o for (t, p), o in sorted(r.watermark.items())},
        "last_id": r.last_id,
        "rows_done": r.rows_done,
        "rows_failed": r.rows_failed,
        "status": r.status.value,
        "message": r.message,
    }
