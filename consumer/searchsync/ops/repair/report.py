"""What a rotation of the repair wheel reports: per bucket, per stray sweep, and in all."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from searchsync.ops.repair.generations import Epoch
from searchsync.ops.repair.model import Finding, FindingKind
from searchsync.ops.repair.schedule import Choice


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
class StrayReport:
    """One type's stray sweep: `outside` documents outside the key space and `misplaced` ones
    were read, `candidates` re-read after the settle delay; `ahead` documents above their row's
    revision are left alone. `truncated`: the read stopped at its ceiling."""

    aggregate_type: str
    outside: int = 0
    misplaced: int = 0
    candidates: int = 0
    findings: list[Finding] = field(default_factory=list)
    appended: int = 0
    ahead: int = 0
    truncated: bool = False
    seconds: float = 0.0
    interrupted: str | None = None
    stopped: str | None = None


@dataclass(slots=True)
class RotationReport:
    epochs: dict[str, Epoch] = field(default_factory=dict)
    new_epochs: list[str] = field(default_factory=list)
    buckets: list[BucketReport] = field(default_factory=list)
    choices: list[tuple[str, Choice]] = field(default_factory=list)
    seconds: float = 0.0
    oldest_age_s: dict[str, float] = field(default_factory=dict)
    stopped: str | None = None  # why the rotation ended early (the live lag stayed too high)
    strays: list[StrayReport] = field(default_factory=list)
    content_share: float = 0.0  # the share of buckets whose content this rotation checks

    @property
    def parts(self) -> list[BucketReport | StrayReport]:
        """The buckets, then the stray sweeps."""
        return [*self.buckets, *self.strays]

    def findings(self) -> list[Finding]:
        """Every confirmed finding: the buckets', then the stray sweeps'."""
        return [f for part in self.parts for f in part.findings]

    def counts(self) -> dict[str, int]:
        c: Counter[str] = Counter({k.value: 0 for k in FindingKind})
        c.update(f.kind.value for f in self.findings())
        return dict(c)

    @property
    def interrupted(self) -> int:
        return sum(1 for b in self.buckets if b.interrupted is not None)

    @property
    def complete(self) -> bool:
        """Every bucket and stray sweep read completely, and the rotation not stopped."""
        swept = all(s.interrupted is None for s in self.strays)
        return swept and not self.interrupted and self.stopped is None
