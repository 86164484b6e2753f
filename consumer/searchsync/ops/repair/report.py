"""What a rotation of the repair wheel reports: per bucket, and for the whole rotation (the
`searchsync repair` table and JSON, `status`, the benchmark)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from searchsync.ops.repair.model import Finding, FindingKind
from searchsync.ops.repair.schedule import Choice
from searchsync.ops.repair.state import Epoch

__all__ = ["BucketReport", "RotationReport"]


@dataclass(slots=True)
class BucketReport:
    aggregate_type: str
    bucket: int
    generation: int
    content_checked: bool
    rows: int = 0
    docs: int = 0
    candidates: int = 0
    findings: list[Finding] = field(default_factory=list)
    appended: int = 0
    seconds: float = 0.0
    interrupted: str | None = None
    stopped: str | None = None  # the live lag stayed too high while healing


@dataclass(slots=True)
class RotationReport:
    epochs: dict[str, Epoch] = field(default_factory=dict)
    new_epochs: list[str] = field(default_factory=list)
    buckets: list[BucketReport] = field(default_factory=list)
    choices: list[tuple[str, Choice]] = field(default_factory=list)
    seconds: float = 0.0
    oldest_age_s: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None  # why the rotation ended early (the live lag stayed too high)

    def counts(self) -> dict[str, int]:
        c: Counter[str] = Counter({k.value: 0 for k in FindingKind})
        for b in self.buckets:
            c.update(f.kind.value for f in b.findings)
        return dict(c)

    @property
    def interrupted(self) -> int:
        return sum(1 for b in self.buckets if b.interrupted is not None)
