"""Which buckets to scan next: ``priority = (age / SLO)^gamma * (lambda + eps) / cost``, lambda
the EWMA of the drift rate. A never-scanned bucket counts as `max_staleness` old; one at least that
old comes first, whatever its score. The policy is ``[repair]``'s (`RepairSettings`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Final

from searchsync.config import RepairSettings
from searchsync.ops.repair.generations import BucketState

DEFAULT_COST_S: Final = 1.0
"""The scan cost of a bucket never scanned."""


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


def age_s(state: BucketState, now: datetime, max_staleness_s: float) -> float:
    """Seconds since the bucket's last complete scan (`max_staleness_s` if never)."""
    at = state.last_complete_at
    return max_staleness_s if at is None else (now - at).total_seconds()


def choose(
    buckets: Iterable[BucketState], now: datetime, policy: RepairSettings, limit: int
) -> list[Choice]:
    """The `limit` buckets to scan now, forced ones first, then by score (ties: bucket)."""
    choices: list[Choice] = []
    for b in buckets:
        age = age_s(b, now, policy.max_staleness_s)
        cost = b.cost_s if b.cost_s is not None else DEFAULT_COST_S
        score = priority(age, policy.slo_s, policy.gamma, b.drift_ewma, policy.epsilon, cost)
        choices.append(
            Choice(b.bucket, score, age, b.drift_ewma, cost, age >= policy.max_staleness_s)
        )
    choices.sort(key=lambda c: (not c.forced, -c.score, c.bucket))
    return choices[:limit]
