"""What the members of a fault run logged about their partitions and outcomes: each member's JSON
log (members.py) read from a byte offset on, so a step can look at what happened after a point
in time (a freeze) without a clock shared with the member."""

from __future__ import annotations

import json
from typing import Any

from tests.faults.members import Group, Member

ARTICLE_TOPIC = "outbox.event.article"


def _entries(member: Member, start: int = 0) -> list[dict[str, Any]]:
    """The rebalance lines of `member`'s log from byte `start` on."""
    with member.log_path.open("rb") as f:
        f.seek(start)
        data = f.read()
    out = []
    for line in data.splitlines():
        if b"partitions " not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # cut short
        if isinstance(entry, dict) and str(entry.get("msg", "")).startswith("partitions "):
            out.append(entry)
    return out


def _holding(member: Member, topic: str) -> set[str]:
    """The partitions of `topic` ("topic[p]") `member` holds by its log (incremental assigns)."""
    held: set[str] = set()
    for entry in _entries(member):
        parts = {p for p in entry.get("partitions", []) if p.startswith(f"{topic}[")}
        if entry["msg"] == "partitions assigned":
            held |= parts
        else:  # revoked, lost
            held -= parts
    return held


def holders(group: Group, partitions: int) -> dict[Member, set[str]] | None:
    """The live members holding article partitions, once the group has settled: at least two
    live members, each with an assignment logged, the live members holding every article
    partition once; None before."""
    live = group.live
    if len(live) < 2 or not all(
        any(e["msg"] == "partitions assigned" for e in _entries(m)) for m in live
    ):
        return None
    held = {m: _holding(m, ARTICLE_TOPIC) for m in live}
    every = [p for parts in held.values() for p in parts]
    if sorted(every) != [f"{ARTICLE_TOPIC}[{p}]" for p in range(partitions)]:
        return None
    return {m: parts for m, parts in held.items() if parts}


def took_over(group: Group, frozen: Member, parts: set[str], sizes: dict[int, int]) -> int | None:
    """Another live member that logged the assignment of one of `parts` after the freeze."""
    for m in group.live:
        if m is frozen:
            continue
        for entry in _entries(m, sizes.get(m.number, 0)):
            if entry["msg"] == "partitions assigned" and parts & set(entry.get("partitions", [])):
                return m.number
    return None


def outcomes(member: Member, start: int, prefix: str) -> dict[str, int]:
    """The outcomes `member` logged for the run's articles from byte `start` on."""
    out: dict[str, int] = {}
    with member.log_path.open("rb") as f:
        f.seek(start)
        data = f.read()
    for line in data.splitlines():
        if ARTICLE_TOPIC.encode() not in line or prefix.encode() not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("msg") == "event outcome":
            result = str(entry.get("result"))
            out[result] = out.get(result, 0) + 1
    return out


def let_go(member: Member, start: int) -> str | None:
    """The first revoke or loss `member` logged after `start`."""
    for entry in _entries(member, start):
        if entry["msg"] in ("partitions revoked", "partitions lost"):
            return f"{entry['msg']} {entry.get('partitions')}"
    return None
