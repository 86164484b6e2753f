"""A fault schedule: a pure function of a seed, so a failing schedule replays from its seed.

`make_schedule(seed)` returns the members to start with and a list of steps, each a time offset
from the schedule's start, a fault and its parameters. Steps never overlap: a step starts at or
after the previous one's end (`at_s + duration_s`), so "ES is stopped" and "ES blocks writes"
never meet. Wall-clock time during a run follows the schedule as closely as the services let it
(a restart takes what it takes); the schedule itself never depends on anything but the seed.

Every fault's expected outcome is the same cell of the matrix (tests/faults/README.md): after
the faults stop, the index converges to the truth (divergent = 0, resurrected = 0), every
hostile message is dead-lettered with its reason, and every consumed offset has an outcome.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final


class Fault(enum.StrEnum):
    KILL9 = "kill9"  # kill -9 one member at a random point, restart it after a pause
    KILL9_MID_REVOKE = "kill9_mid_revoke"  # SIGTERM a member, kill -9 it while it revokes
    SIGTERM = "sigterm"  # graceful leave: cooperative revoke commits the finished prefix
    ADD_MEMBER = "add_member"  # one more member joins (at most 3): a rebalance under load
    KAFKA_RESTART = "kafka_restart"
    CONNECT_RESTART = "connect_restart"
    CONNECTOR_TASK_RESTART = "connector_task_restart"  # REST: restart task 0
    ES_RESTART = "es_restart"  # stop, wait duration_s, start: deleted versions are forgotten
    ES_429 = "es_429"  # the loopback proxy answers 429 to a share of _bulk requests
    ES_WRITE_BLOCK = "es_write_block"  # index.blocks.write on the physical index
    MYSQL_KILL = "mysql_kill"  # KILL CONNECTION of every consumer connection
    MYSQL_RESTART = "mysql_restart"
    REPLAY_SAMPLE = "replay_sample"  # re-publish a shuffled sample of this schedule's events
    OFFSETS_RESET = "offsets_reset"  # stop the group, reset to the schedule's start, restart
    HOSTILE = "hostile"  # one batch of hostile messages
    # an author's fan-out: SIGSTOP the member rewriting the articles, rename again, SIGCONT
    FANOUT_FREEZE = "fanout_freeze"
    # relay schedules only (the outbox published by `searchsync relay`, tests/faults/README.md)
    RELAY_KILL9 = "relay_kill9"  # kill -9 one relay at a random point, restart it after a pause
    RELAY_KILL9_MID_CLAIM = "relay_kill9_mid_claim"  # kill -9 a relay while it holds a claim
    RELAY_ADD = "relay_add"  # one more relay claims next to the others (at most 3)
    RELAY_STALL = "relay_stall"  # SIGSTOP a relay past the claim timeout: a peer takes back


SERVICE_RESTARTS: Final = frozenset(
    {Fault.KAFKA_RESTART, Fault.CONNECT_RESTART, Fault.ES_RESTART, Fault.MYSQL_RESTART}
)
"""Faults that restart a shared service: never in the subset that runs inside `make test`."""

RELAY_FAULTS: Final = frozenset(
    {Fault.RELAY_KILL9, Fault.RELAY_KILL9_MID_CLAIM, Fault.RELAY_ADD, Fault.RELAY_STALL}
)
"""Faults of the relay processes: drawn only in relay schedules."""

NOT_IN_RELAY_SCHEDULES: Final = frozenset(
    {Fault.CONNECT_RESTART, Fault.CONNECTOR_TASK_RESTART, Fault.FANOUT_FREEZE}
)
"""Faults of Kafka Connect, which a relay schedule does not use, and the fan-out freeze (its
authors and articles go through the stack's database and topics, not a relay's)."""

ALL_FAULTS: Final = frozenset(Fault)

RELAY_SHARE: Final = 1 / 3
"""The share of schedules that publish through `searchsync relay` when relay faults may be drawn."""

FANOUT_SHARE: Final = 3 / 8
"""The share of the Debezium schedules with one `fanout_freeze` step when it may be drawn (its
weight: about 1 in 4 of all schedules, a third of them publishing through the relay). Drawn from
a random stream of its own, so every other step of every seed stays as it was before the kind
joined; the step takes the place of one of the drawn steps."""

# How often each fault is drawn: the restarts of slow services are rarer, so that a run of 200
# schedules fits in a few hours on a 2-core machine (tests/faults/README.md).
_WEIGHTS: Final = {
    Fault.KILL9: 6,
    Fault.KILL9_MID_REVOKE: 3,
    Fault.SIGTERM: 3,
    Fault.ADD_MEMBER: 3,
    Fault.KAFKA_RESTART: 1,
    Fault.CONNECT_RESTART: 1,
    Fault.CONNECTOR_TASK_RESTART: 2,
    Fault.ES_RESTART: 1,
    Fault.ES_429: 4,
    Fault.ES_WRITE_BLOCK: 3,
    Fault.MYSQL_KILL: 3,
    Fault.MYSQL_RESTART: 1,
    Fault.REPLAY_SAMPLE: 4,
    Fault.OFFSETS_RESET: 2,
    Fault.HOSTILE: 4,
    Fault.RELAY_KILL9: 8,
    Fault.RELAY_KILL9_MID_CLAIM: 8,
    Fault.RELAY_ADD: 6,
    Fault.RELAY_STALL: 4,
}
_TIMED: Final = frozenset({Fault.ES_RESTART, Fault.ES_429, Fault.ES_WRITE_BLOCK})
RELAY_CLAIM_TIMEOUT_S: Final = 3.0
"""The relays' ``relay.claim_timeout_s`` in a relay schedule; a RELAY_STALL outlasts it by 2-4 s."""


@dataclass(frozen=True, slots=True)
class Step:
    """One fault: at `at_s` seconds after the start, lasting `duration_s` (0: instantaneous).

    `param`: the member or relay index (kills, SIGTERM, RELAY_STALL), the restart pause in ms
    (KILL9, RELAY_KILL9, RELAY_KILL9_MID_CLAIM), the delay in ms before the kill
    (KILL9_MID_REVOKE), the share of 429s in percent (ES_429), the sample size (REPLAY_SAMPLE),
    0 otherwise. A RELAY_STALL lasts `duration_s`, longer than `RELAY_CLAIM_TIMEOUT_S`."""

    at_s: float
    fault: Fault
    duration_s: float = 0.0
    param: int = 0

    @property
    def end_s(self) -> float:
        return self.at_s + self.duration_s


@dataclass(frozen=True, slots=True)
class Schedule:
    seed: int
    members: int  # `searchsync run` processes at the start (2 or 3)
    window_s: float  # how long the faults are spread over (10..30 s)
    steps: tuple[Step, ...]
    workload_seed: int
    relays: int = 0  # `searchsync relay run` processes at the start (1 or 2; 0: Debezium)

    @property
    def publisher(self) -> str:
        """Who publishes the run's outbox: ``debezium`` or ``relay``."""
        return "relay" if self.relays else "debezium"

    def describe(self) -> str:
        faults = ",".join(s.fault.value for s in self.steps)
        return f"relay:{faults}" if self.relays else faults


def make_schedule(
    seed: int,
    *,
    faults: Collection[Fault] = ALL_FAULTS,
    max_steps: int = 5,
    window: tuple[float, float] = (10.0, 30.0),
) -> Schedule:
    """The schedule of `seed`, drawing only from `faults`, its faults spread over a window of
    `window` seconds (pure: no clock, no I/O).

    When `faults` holds a relay fault, a share (`RELAY_SHARE`) of the seeds give relay
    schedules, drawn from a stream of their own: every other seed gives the schedule it gave
    before the relay joined the mix. A relay schedule draws from `faults` less the connector's."""
    if not faults:
        raise ValueError("at least one fault kind is needed")
    if not 0 < window[0] <= window[1]:
        raise ValueError(f"window must be 0 < low <= high, got {window}")
    rng = random.Random(f"searchsync-faults:{seed}")
    relays = _relays(seed, faults)
    allowed = (set(faults) - NOT_IN_RELAY_SCHEDULES) if relays else (set(faults) - RELAY_FAULTS)
    fanout = Fault.FANOUT_FREEZE in allowed
    allowed.discard(Fault.FANOUT_FREEZE)  # drawn apart: `_with_fanout`
    if not allowed:  # only the fan-out freeze was asked for: one step of it
        only = _fanout_step(seed, ())
        return Schedule(seed, rng.choice((2, 3)), window[0], only, rng.randrange(2**31))
    kinds = sorted(allowed, key=lambda f: f.value)  # a set's order must not matter
    weights = [_WEIGHTS[k] for k in kinds]
    members = rng.choice((2, 3))
    window_s = round(rng.uniform(*window), 1)
    n = rng.randint(2, max(2, max_steps))
    steps: list[Step] = []
    t = round(rng.uniform(0.5, 3.0), 2)
    for _ in range(n):
        fault = rng.choices(kinds, weights)[0]
        step = _step(rng, fault, t)
        steps.append(step)
        t = round(step.end_s + rng.uniform(0.5, max(0.6, window_s / n)), 2)
    drawn = _fanout_step(seed, steps) if fanout else tuple(steps)
    return Schedule(seed, members, window_s, drawn, rng.randrange(2**31), relays)


def _fanout_step(seed: int, steps: list[Step] | tuple[()]) -> tuple[Step, ...]:
    """`steps` with one of them (a seed's own draw, `FANOUT_SHARE` of the seeds) turned into a
    `fanout_freeze` at the same time; its duration is the wall time its conditions take (0 in
    the schedule). No steps: the freeze alone."""
    rng = random.Random(f"searchsync-faults-fanout:{seed}")
    if not steps:
        return (Step(round(rng.uniform(0.5, 3.0), 2), Fault.FANOUT_FREEZE),)
    if rng.random() >= FANOUT_SHARE:
        return tuple(steps)
    i = rng.randrange(len(steps))
    return (*steps[:i], Step(steps[i].at_s, Fault.FANOUT_FREEZE), *steps[i + 1 :])


def _relays(seed: int, faults: Collection[Fault]) -> int:
    """How many relays a schedule starts with: 0 (Debezium publishes) unless relay faults may
    be drawn and the seed's own draw makes it a relay schedule."""
    if not RELAY_FAULTS & set(faults):
        return 0
    rng = random.Random(f"searchsync-faults-relay:{seed}")
    # the freeze leaves the draw as it was: a schedule of relay kinds only stays a relay one
    relay = rng.random() < RELAY_SHARE or set(faults) - {Fault.FANOUT_FREEZE} <= RELAY_FAULTS
    return rng.choice((1, 2)) if relay else 0


def _step(rng: random.Random, fault: Fault, at: float) -> Step:
    duration = round(rng.uniform(2.0, 8.0), 1) if fault in _TIMED else 0.0
    if fault is Fault.RELAY_STALL:
        duration = round(RELAY_CLAIM_TIMEOUT_S + rng.uniform(2.0, 4.0), 1)
    if fault in (Fault.KILL9, Fault.SIGTERM, Fault.RELAY_KILL9, Fault.RELAY_KILL9_MID_CLAIM):
        param = rng.randrange(3) * 10_000 + rng.randrange(0, 3000)  # member, pause in ms
    elif fault is Fault.RELAY_STALL:
        param = rng.randrange(3) * 10_000
    elif fault is Fault.KILL9_MID_REVOKE:
        param = rng.randrange(3) * 10_000 + rng.randrange(0, 500)  # member, delay in ms
    elif fault is Fault.ES_429:
        param = rng.randrange(20, 90)
    elif fault is Fault.REPLAY_SAMPLE:
        param = rng.randrange(20, 200)
    else:
        param = 0
    return Step(at, fault, duration, param)
