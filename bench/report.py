"""The pipeline benchmark's report: options, what was measured, and the text rendering (the
CPU-per-event table, the ceiling, the ratios, the scale-out)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Final

from bench.common import median_spread
from bench.live import HOT_KEY_UPDATES, LagFigures
from bench.runs import BULK_IN_FLIGHT, BULK_SIZE, Window

CEILING_TARGET: Final = 0.8
ES_EFFICIENCY_TARGET: Final = 1.2
LAG_P99_TARGET_S: Final = 1.5
CONSUMER_SERVICES_TARGET: Final = 0.5
FLOOR_RATIO_TARGET: Final = 1.5  # the consumer's CPU per event / the floor's, same run
SCALE_TARGET: Final = 1.3  # events/s of 2 members / of 1
COLUMNS: Final = ("consumer", "elasticsearch", "mariadb", "kafka", "connect", "bench")
SERVICES: Final = ("elasticsearch", "mariadb", "kafka", "connect")


@dataclass(frozen=True, slots=True)
class BenchOptions:
    events: int = 5_000
    repeats: int = 3
    members: tuple[int, ...] = (1, 2, 3)
    lag_seconds: float = 10.0
    as_json: bool = False
    paced_writer: str | None = None


@dataclass
class Report:
    command: str
    started_at: str
    host: str
    cores: int
    events: int
    write_rate: float = math.nan
    kafka_ready_seconds: float = math.nan
    services: list[str] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    lag: LagFigures | None = None
    hot_key: tuple[float, float, float] | None = None
    rss_mib: float = math.nan
    hwm_mib: float = math.nan
    floor_rounds: list[dict[str, float]] = field(default_factory=list)  # bench.floor, per round
    notes: list[str] = field(default_factory=list)

    def of(self, kind: str, members: int | None = None) -> list[Window]:
        return [w for w in self.windows if w.kind == kind and members in (None, w.members)]

    def rates(self, kind: str, members: int | None = None) -> list[float]:
        return [w.rate for w in self.of(kind, members)]

    def cpu_ms(self, kind: str, name: str, members: int | None = None, net: bool = False) -> float:
        values = [w.ms_per_event(name, net=net) for w in self.of(kind, members)]
        return median_spread(values)[0]

    def services_ms(self, kind: str, members: int | None = None, net: bool = False) -> float:
        per = [
            sum(w.ms_per_event(s, net=net) for s in SERVICES if s in w.cpu)
            for w in self.of(kind, members)
        ]
        return median_spread(per)[0]

    @property
    def floor(self) -> dict[str, float]:
        """Each floor step's best CPU ms per event over the rounds."""
        steps = self.floor_rounds[0] if self.floor_rounds else {}
        return {step: min(r[step] for r in self.floor_rounds) for step in steps}

    def floor_ratios(self, kind: str = "pipeline") -> list[float]:
        """Per round: the one-member consumer's CPU per event / that round's floor."""
        consumer = [w.ms_per_event("consumer") for w in self.of(kind, 1)]
        return [c / sum(f.values()) for c, f in zip(consumer, self.floor_rounds, strict=False)]

    def ceiling(self, net: bool = False) -> float:
        services = self.services_ms("pipeline", 1, net)
        return 1000 * self.cores / services if services > 0 else math.nan

    def to_json(self) -> dict[str, Any]:
        def clean(value: Any) -> Any:
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if isinstance(value, dict):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [clean(v) for v in value]
            return value

        out = clean(asdict(self))
        out["derived"] = clean(
            {
                "ceiling": self.ceiling(),
                "pipeline_rate": median_spread(self.rates("pipeline", 1))[0],
                "raw_rate": median_spread(self.rates("raw"))[0],
                "floor": self.floor,
                "floor_ratios": self.floor_ratios(),
            }
        )
        return dict(out)


def _met(ok: bool) -> str:
    return "MET" if ok else "MISSED"


def _ms(f: Callable[[], float]) -> str:
    value = f()
    return f"{value:8.4f}" if math.isfinite(value) else "       -"


def _rate_line(label: str, rates: Sequence[float], unit: str) -> str:
    med, lo, hi = median_spread(rates)
    return f"   {label:<26}{med:8.0f} {unit}  [{lo:.0f}-{hi:.0f}, n={len(rates)}]"


def render_text(r: Report) -> str:
    pipe = median_spread(r.rates("pipeline", 1))[0]
    raw = median_spread(r.rates("raw"))[0]
    ceiling = r.ceiling()
    lines = [
        f"searchsync pipeline benchmark  {r.started_at}  {r.host}",
        f"command: {r.command}",
        f"consumer: `python -m searchsync run` processes, default log level (INFO);"
        f" {r.events} events per run; medians [min-max] of {len(r.of('raw'))} rounds",
        f"setup: writers {r.write_rate:.0f} pages/s; events captured"
        f" {r.kafka_ready_seconds:.1f}s after the first write",
        "",
        "1. throughput",
        _rate_line("raw ES bulk", r.rates("raw"), "docs/s")
        + f"  ({BULK_SIZE}/bulk, {BULK_IN_FLIGHT} in flight)",
        _rate_line("pipeline, 1 process", r.rates("pipeline", 1), "events/s"),
        f"   ratio pipeline/raw        {pipe / raw:8.2f}",
        "",
        "2. CPU ms per event (median)  " + " ".join(f"{c:>9}" for c in COLUMNS) + "  services",
    ]
    for net in (False, True):
        if net:
            lines.append(
                "   less each process's background (CPU/s in the second before the window:"
                " other sessions' load):"
            )
        for kind, members in (("pipeline", 1), ("raw", None), ("replay", 1)):
            if not r.of(kind, members):
                continue
            row = " ".join(_ms(partial(r.cpu_ms, kind, c, members, net)) + " " for c in COLUMNS)
            label = f"{kind}" + (" x1" if members else "") + (" net" if net else "")
            services = _ms(partial(r.services_ms, kind, members, net))
            lines.append(f"   {label:<27}{row} {services}")
    net_ceiling = r.ceiling(net=True)
    consumer_ms = r.cpu_ms("pipeline", "consumer", 1)
    services_ms = r.services_ms("pipeline", 1) or math.nan  # no service found: no ratio
    es_ratio = r.cpu_ms("pipeline", "elasticsearch", 1) / r.cpu_ms("raw", "elasticsearch")
    lines += [
        f"   ceiling = {r.cores} cores / services {services_ms:.4f} ms = {ceiling:.0f} events/s"
        f" (= {ceiling / raw:.2f} of raw; from the net figures {net_ceiling:.0f}/s, noisy)",
        f"   pipeline/ceiling          {pipe / ceiling:8.2f}   target >= {CEILING_TARGET}:"
        f" {_met(pipe / ceiling >= CEILING_TARGET)}",
        f"   consumer/services CPU     {consumer_ms / services_ms:8.2f}"
        f"   target <= {CONSUMER_SERVICES_TARGET}:"
        f" {_met(consumer_ms / services_ms <= CONSUMER_SERVICES_TARGET)}",
        f"   ES pipeline/raw CPU       {es_ratio:8.2f}   target <= {ES_EFFICIENCY_TARGET}:"
        f" {_met(es_ratio <= ES_EFFICIENCY_TARGET)}"
        f"  (docs/bulk pipeline {_docs_per_bulk(r, 'pipeline')}, raw {BULK_SIZE})",
    ]
    replay = r.of("replay")
    if replay:
        w = replay[0]
        lines += [
            "",
            f"3. replay (offsets reset --to earliest, 1 process)  {w.rate:8.0f} events/s"
            f"  ({w.count} events in {w.seconds:.2f}s; replay/pipeline {w.rate / pipe:.2f})",
        ]
    lines += [
        "",
        "4. scale-out (same topic, 3 partitions)  events/s [min-max]   CPU ms/event:"
        " consumer  services   box busy  per-process",
    ]
    for n in sorted({w.members for w in r.of("pipeline")}):
        ws = r.of("pipeline", n)
        med, lo, hi = median_spread([w.rate for w in ws])
        busy = median_spread([w.cpu.get("machine", math.nan) / w.seconds for w in ws])[0]
        per = median_spread([w.cpu["consumer"] / w.seconds / n for w in ws])[0]
        lines.append(
            f"   {n} process{'es' if n > 1 else '  '}  {med:8.0f} [{lo:.0f}-{hi:.0f}]"
            f"          {r.cpu_ms('pipeline', 'consumer', n):8.4f}"
            f"  {r.services_ms('pipeline', n):8.4f}"
            f"   {busy:5.2f}/{r.cores} cores  {per:4.2f} core each"
        )
    if r.of("pipeline", 2):
        scale = median_spread(r.rates("pipeline", 2))[0] / pipe
        lines.append(
            f"   2 processes / 1           {scale:8.2f}   target >= {SCALE_TARGET}:"
            f" {_met(scale >= SCALE_TARGET)}"
        )
    if r.lag is not None:
        g = r.lag
        lines += [
            "",
            f"5. commit->searchable lag   p50 {g.p50_s:.3f}s  p99 {g.p99_s:.3f}s"
            f"  max {g.max_s:.3f}s"
            f"   target p99 <= {LAG_P99_TARGET_S}s: {_met(g.p99_s <= LAG_P99_TARGET_S)}",
            f"   of which: commit->in Kafka p50 {g.kafka_p50_s:.3f}s p99 {g.kafka_p99_s:.3f}s;"
            f" commit->ES write acked p50 {g.written_p50_s:.3f}s p99 {g.written_p99_s:.3f}s",
            f"   {g.pages} pages at {g.achieved_rate:.0f}/s (asked {g.target_rate:.0f}/s ="
            f" 0.5 x pipeline); {g.unseen} never seen; includes ES refresh_interval (1 s)",
        ]
    if r.hot_key is not None:
        lines.append(
            f"6. hot key                  {r.hot_key[0]:.0f} ES item writes per"
            f" {HOT_KEY_UPDATES} updates ({r.hot_key[1]:.0f} bulks, {r.hot_key[2]:.0f} consumed)"
        )
        lines.append(
            f"7. live consumer memory     VmRSS {r.rss_mib:.0f} MiB, VmHWM {r.hwm_mib:.0f} MiB"
        )
    lines += _floor_lines(r, consumer_ms, services_ms)
    lines += [f"note: {n}" for n in r.notes]
    lines += [f"note: {n}" for w in r.windows for n in w.notes]
    missing = sum(w.missing for w in r.of("pipeline"))
    if missing:
        lines.append(f"note: {missing} documents missing after the pipeline runs")
    return "\n".join(lines)


def _docs_per_bulk(r: Report, kind: str) -> str:
    ws = r.of(kind, 1)
    return f"{sum(w.count for w in ws) / max(1.0, sum(w.bulks for w in ws)):.0f}"


def _floor_lines(r: Report, consumer_ms: float, services_ms: float) -> list[str]:
    """Section 8: what the fixed libraries alone cost per event (bench/floor.py), against the
    consumer's CPU (target: at most `FLOOR_RATIO_TARGET` x the floor) and a quarter of the
    services' CPU (the target before it)."""
    if not r.floor:
        return []
    total = sum(r.floor.values())
    target = 0.25 * services_ms
    ratio, lo, hi = median_spread(r.floor_ratios())
    per_round = " ".join(f"{sum(f.values()):.4f}" for f in r.floor_rounds)
    lines = [
        "",
        "8. floor of the fixed libraries (bench/floor.py; this process, after each round's"
        " pipeline runs; best of the rounds)",
    ]
    lines += [f"   {step:<26}{ms:8.4f} ms/event" for step, ms in r.floor.items()]
    lines += [
        f"   floor total               {total:8.4f} ms/event = {total / consumer_ms:.2f} of the"
        f" consumer's {consumer_ms:.4f} (per round: {per_round})",
        f"   consumer/floor            {ratio:8.2f}   target <= {FLOOR_RATIO_TARGET}:"
        f" {_met(ratio <= FLOOR_RATIO_TARGET)}  (per round, median [{lo:.2f}-{hi:.2f}])",
        f"   target consumer <= 0.25 x services = {target:.4f} ms/event: the floor alone is"
        f" {total / target:.2f} x that",
    ]
    if r.of("compare", 1):  # BENCH_COMPARE_PYTHON: the other consumer, same rounds
        other, lo, hi = median_spread(r.floor_ratios("compare"))
        mine = [w.ms_per_event("consumer") for w in r.of("pipeline", 1)]
        theirs = [w.ms_per_event("consumer") for w in r.of("compare", 1)]
        ours, olo, ohi = median_spread([a / b for a, b in zip(mine, theirs, strict=False)])
        lines += [
            f"   the other consumer: {r.cpu_ms('compare', 'consumer', 1):.4f} ms/event,"
            f" consumer/floor {other:.2f} [{lo:.2f}-{hi:.2f}];"
            f" this / other per round {ours:.2f} [{olo:.2f}-{ohi:.2f}]"
        ]
    return lines
