"""The watchers' sections: ``[exporter]`` (`searchsync exporter`) and ``[canary]``."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.config._reader import _HOST, integer, number, setting, text


@dataclass(frozen=True, slots=True)
class ExporterSettings:
    """`searchsync exporter` (docs/design.md, "Watching the group from outside"): the group's
    state every `interval_s`; `expected_members`: the member count the deployment runs."""

    interval_s: float = setting(15.0, number(0.0, 3_600.0, lo_open=True))
    expected_members: int = setting(1, integer(0, 10_000))
    metrics_host: str = setting("127.0.0.1", text(_HOST, "a host name or IP address"))
    metrics_port: int = setting(9470, integer(0, 65_535))
    peek_timeout_s: float = setting(5.0, number(0.0, 300.0, lo_open=True))


@dataclass(frozen=True, slots=True)
class CanarySettings:
    """The freshness canary: a heartbeat through the outbox every `interval_s` (0: off)."""

    interval_s: float = setting(0.0, number(0.0, 86_400.0))
    poll_s: float = setting(1.0, number(0.0, 3_600.0, lo_open=True))
