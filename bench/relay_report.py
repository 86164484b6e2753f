"""The relay benchmark's report as text (`bench.relay_bench`; `--json` prints the dict)."""

from __future__ import annotations

import math
from typing import Any


def render(report: dict[str, Any]) -> str:
    pub, drn, lag = report["publish"], report["drain"], report["searchable"]
    o = report["options"]

    def fig(d: dict[str, list[float]], key: str, digits: int = 3) -> str:
        if key not in d:
            return "-"
        med, lo, hi = d[key]
        return f"{med:,.{digits}f} [{lo:,.{digits}f}-{hi:,.{digits}f}]"

    lines = [
        f"searchsync relay benchmark  {report['started_at']}  {report['host']}",
        f"command: {report['command']}",
        f"{o['events']} pages per window, {o['rounds']} rounds, {o['relays']} relay(s);"
        " medians [min-max]",
        "",
        "| path | events/s | writes/s | MariaDB CPU ms/event | publisher CPU ms/event"
        " | Kafka CPU ms/event | commit->searchable p50 / p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, publisher in (("debezium", "connect_ms"), ("relay", "relay_ms")):
        d, s = pub[name], lag.get(name, {})
        lines.append(
            f"| {name} | {fig(d, 'events_s', 0)} | {fig(d, 'writes_s', 0)}"
            f" | {fig(d, 'mariadb_ms')} | {fig(d, publisher)} | {fig(d, 'kafka_ms')}"
            f" | {s.get('p50_s', math.nan):.3f} s / {s.get('p99_s', math.nan):.3f} s |"
        )
    lines += [
        "",
        f"relay drain of a backlog of {o['events']}: {fig(drn, 'drain_events_s', 0)} events/s;"
        f" MariaDB {fig(drn, 'drain_mariadb_ms')} and the relays {fig(drn, 'drain_relay_ms')}"
        " CPU ms/event while only they work; the writes alone cost MariaDB"
        f" {fig(drn, 'writes_only_mariadb_ms')} CPU ms/event",
        f"commit->searchable at {o['rate']:g} pages/s for {o['lag_seconds']:g} s:"
        + "".join(
            f" {n} {s.get('pages', 0):.0f} pages (unseen {s.get('unseen', 0):.0f},"
            f" max {s.get('max_s', math.nan):.3f} s);"
            for n, s in lag.items()
        ),
        *report["notes"],
    ]
    return "\n".join(lines)
