"""The watchers' sections: ``[exporter]`` (`searchsync exporter`) and ``[canary]``."""

from __future__ import annotations

from dataclasses import dataclass

from searchsync.config._reader import _HOST, _Section


@dataclass(frozen=True, slots=True)
class ExporterSettings:
    """`searchsync exporter` (docs/design.md, "Watching the group from outside"): the group's
    state every `interval_s`; `expected_members`: the member count the deployment runs."""

    interval_s: float = 15.0
    expected_members: int = 1
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9470
    peek_timeout_s: float = 5.0


@dataclass(frozen=True, slots=True)
class CanarySettings:
    """The freshness canary: a heartbeat through the outbox every `interval_s` (0: off)."""

    interval_s: float = 0.0
    poll_s: float = 1.0


def _exporter(r: _Section) -> ExporterSettings:
    return ExporterSettings(
        interval_s=r.number("interval_s", 0.0, 3_600.0, lo_open=True),
        expected_members=r.integer("expected_members", 0, 10_000),
        metrics_host=r.string("metrics_host", _HOST, "a host name or IP address"),
        metrics_port=r.integer("metrics_port", 0, 65_535),
        peek_timeout_s=r.number("peek_timeout_s", 0.0, 300.0, lo_open=True),
    )


def _canary(r: _Section) -> CanarySettings:
    return CanarySettings(
        interval_s=r.number("interval_s", 0.0, 86_400.0),
        poll_s=r.number("poll_s", 0.0, 3_600.0, lo_open=True),
    )
