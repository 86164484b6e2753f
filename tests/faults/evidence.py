"""What the members logged and dead-lettered, checked against what the run did.

- **Offsets.** Every member writes one JSON line per event outcome (docs/design.md, "Dead letters
  and the event log line") and one "poison message dead-lettered" line per undecodable message.
  Every offset of the run's range (the group's start to its final committed offset, per
  partition) must have at least one terminal outcome: applied, already_applied, superseded or
  dead_lettered. An offset read twice (after a kill, a rebalance, a reset) may have several.
- **Dead letters.** Every hostile message must be in the run's DLQ topic, at its original
  partition and offset, with the reason it was refused.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TERMINAL = frozenset({"applied", "already_applied", "superseded", "dead_lettered"})


@dataclass(slots=True)
class Outcomes:
    finished: dict[tuple[str, int], set[int]] = field(default_factory=lambda: defaultdict(set))
    results: Counter[str] = field(default_factory=Counter)

    def add(self, entry: Mapping[str, Any]) -> None:
        msg = entry.get("msg")
        if msg == "event outcome":
            result = str(entry.get("result"))
            self.results[result] += 1
            if result not in TERMINAL:
                return
        elif msg == "poison message dead-lettered":
            self.results["dead_lettered"] += 1
        else:
            return
        self.finished[(str(entry["topic"]), int(entry["partition"]))].add(int(entry["offset"]))


def read_outcomes(logs: Iterable[Path]) -> Outcomes:
    out = Outcomes()
    for path in logs:
        with path.open("rb") as f:
            for line in f:
                if b'"offset"' not in line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut short by kill -9
                if isinstance(entry, dict):
                    out.add(entry)
    return out


@dataclass(frozen=True, slots=True)
class Accounting:
    consumed: int
    accounted: int
    missing: tuple[str, ...]


def account(
    topic: str, start: Mapping[int, int], committed: Mapping[int, int], outcomes: Outcomes
) -> Accounting:
    consumed = accounted = 0
    missing: list[str] = []
    for partition, first in sorted(start.items()):
        end = committed.get(partition, first)
        done = outcomes.finished.get((topic, partition), set())
        for offset in range(first, end):
            consumed += 1
            if offset in done:
                accounted += 1
            elif len(missing) < 10:
                missing.append(f"{topic}/{partition}/{offset}")
    return Accounting(consumed, accounted, tuple(missing))


@dataclass(frozen=True, slots=True)
class Hostile:
    """One hostile message as produced: where it landed and the error code it must get."""

    what: str
    partition: int
    offset: int
    code: str


def check_dead_letters(
    hostile: Iterable[Hostile], dead: Mapping[tuple[int, int], set[str]]
) -> list[str]:
    """The hostile messages not in the DLQ with their code (`dead`: (partition, offset) ->
    the codes of the dead letters of that original position)."""
    problems = []
    for h in hostile:
        codes = dead.get((h.partition, h.offset), set())
        if h.code not in codes:
            problems.append(f"{h.what} at {h.partition}/{h.offset}: want {h.code}, got {codes}")
    return problems
