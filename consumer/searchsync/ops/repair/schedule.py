"""Which buckets to scan next: ``priority = (age / SLO)^gamma * (lambda + eps) / cost``, lambda
the EWMA of the drift rate. A never-scanned bucket counts as `max_staleness` old; one at least that
old comes first, whatever its score. `WheelConfig`: the wheel's settings, this policy among them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from searchsync.ops.repair.state import BucketState


@dataclass(frozen=True, slots=True)
class SchedulePolicy:
    slo_s: float = 3600.0
    max_staleness_s: float = 4 * 3600.0
    gamma: float = 2.0
    epsilon: float = 0.01
    alpha: float = 0.3
    default_cost_s: float = 1.0


@dataclass(frozen=True, slots=True)
class WheelConfig:
    bucket_count: int = 64
    page_size: int = 500
    page_min: int = 50
    page_max: int = 5_000
    page_target_s: float = 0.2
    content_share: float = 0.1
    settle_s: float = 10.0
    # Elasticsearch pages of this fixed size (None: adaptive, as MySQL's): a range query costs
    # its whole key range whatever the page, so fewer, larger pages cost less
    index_page_size: int | None = None
    span_buckets: int = 32  # buckets read together (adjacent ones in one key range)
    span_rows: int = 50_000  # ... and at most this many rows by their last scans (>= 1 bucket)
    stray_page: int = 1_000  # strays per page, and ids per settle re-read of the sweep
    stray_ceiling: int = 100_000  # strays outside the key space one sweep reads
    # a soft-deleted row deleted longer ago than this (`RetentionSettings.tombstone_minimum`) may
    # have its tombstone purged: no document is not drift (None: every tombstone is expected)
    tombstone_minimum: timedelta | None = None
    policy: SchedulePolicy = field(default_factory=SchedulePolicy)


@dataclass(frozen=True, slots=True)
class Choice:
    bucket: int
    score: float
    age_s: float
    drift_ewma: float
    cost_s: float
    forced: bool

    def explain(self) -> str:
        why = "forced: older than max staleness" if self.forced else "by score"
        return (
            f"bucket {self.bucket}: score={self.score:.6g} = (age {self.age_s:.1f}s / SLO)^gamma"
            f" * (lambda {self.drift_ewma:.4g} + eps) / cost {self.cost_s:.3g}s  [{why}]"
        )

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def ewma(previous: float, observed: float, alpha: float) -> float:
    return alpha * observed + (1.0 - alpha) * previous


def priority(
    age_s: float, slo_s: float, gamma: float, lam: float, eps: float, cost_s: float
) -> float:
    staleness: float = (max(age_s, 0.0) / slo_s) ** gamma
    return staleness * (lam + eps) / max(cost_s, 1e-9)


def age_s(state: BucketState, now: datetime, policy: SchedulePolicy) -> float:
    """Seconds since the bucket's last complete scan (`max_staleness_s` if never)."""
    at = state.last_complete_at
    return policy.max_staleness_s if at is None else (now - at).total_seconds()


def choose(
    buckets: Iterable[BucketState], now: datetime, policy: SchedulePolicy, limit: int
) -> list[Choice]:
    """The `limit` buckets to scan now, forced ones first, then by score (ties: bucket)."""
    choices: list[Choice] = []
    for b in buckets:
        age = age_s(b, now, policy)
        cost = b.cost_s if b.cost_s is not None else policy.default_cost_s
        score = priority(age, policy.slo_s, policy.gamma, b.drift_ewma, policy.epsilon, cost)
        choices.append(
            Choice(b.bucket, score, age, b.drift_ewma, cost, age >= policy.max_staleness_s)
        )
    choices.sort(key=lambda c: (not c.forced, -c.score, c.bucket))
    return choices[:limit]
