"""What `searchsync rebuild` is asked to do, and what came of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.ops.rebuild.plan import Plan
from searchsync.ops.rebuild.records import RebuildRecord, record_summary
from searchsync.ops.rebuild.verify import VerifyReport

_TIMES = ("started_at", "updated_at", "finished_at")


@dataclass(frozen=True, slots=True)
class RebuildOptions:
    aggregate_type: str
    resume: bool = False
    abandon: bool = False
    dry_run: bool = False
    wait_for_live: bool = True
    stop_after_chunks: int | None = None  # drills and tests: stop as if killed after K chunks

    def check(self, alias: str, existing: RebuildRecord | None) -> None:
        """Refuse to start a second rebuild of `alias`, or to resume none."""
        if existing is not None and not self.resume:
            raise OperationRefused(
                f"alias {alias} has an unfinished rebuild {existing.rebuild_id} "
                f"({existing.status.value}, into {existing.target_index}): pass --resume to "
                "continue it, or --abandon to give it up"
            )
        if existing is None and self.resume:
            raise InvalidRequest(
                f"no unfinished rebuild of {alias} to resume: run without --resume"
            )


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
        return {
            "ok": self.ok,
            "action": self.action,
            "message": self.message,
            "plan": None if self.plan is None else self.plan.summary(),
            "rebuild": None if self.record is None else record_summary(self.record, *_TIMES),
            "verify": None if self.verify is None else self.verify.summary(),
            "failures": [{"id": i, "why": w} for i, w in self.failures],
        }
