"""Applies one schedule step to the running system; blocking work runs in threads, so the
writers and the members keep going meanwhile."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from searchsync.config import Settings
from searchsync.errors import OperationRefused
from searchsync.ops import offsets

from tests.faults import kafka_io, relays
from tests.faults.evidence import Hostile
from tests.faults.fanout import FanoutRig
from tests.faults.members import Group
from tests.faults.proxy import Es429Proxy
from tests.faults.schedule import RELAY_FAULTS, Fault, Step
from tests.faults.services import Stack


@dataclass(slots=True)
class RunState:
    settings: Settings
    stack: Stack
    group: Group
    proxy: Es429Proxy
    index: str  # the physical index behind the alias
    topic: str
    prefix: str
    start_offsets: dict[int, int]
    started_at: datetime
    log_dir: Path
    rng: random.Random
    members_wanted: int
    hostile: list[Hostile] = field(default_factory=list)
    restarted: set[str] = field(default_factory=set)  # services a step stopped and started
    relay: relays.RelayRig | None = None  # a relay schedule's database, topic and relays
    pool: Any = None  # the application's pool (a relay fault looks at the claims through it)
    topics: tuple[str, ...] = ()  # every topic the group reads (lag at quiescence)
    fanout: FanoutRig | None = None  # a fan-out schedule's author and articles


async def apply(step: Step, run: RunState) -> str:
    f, g = step.fault, run.group
    member, ms = divmod(step.param, 10_000)
    slog = run.log_dir / "services.log"
    if f in RELAY_FAULTS:
        if run.relay is None:
            raise AssertionError(f"{f} in a schedule without relays")
        return await relays.apply(step, run.relay, run.pool)
    if f is Fault.KILL9:
        await asyncio.to_thread(g.kill9, member)
        await asyncio.sleep(ms / 1000)
        g.top_up(run.members_wanted)
        return f"kill -9 member {member}, restart after {ms} ms"
    if f is Fault.KILL9_MID_REVOKE:
        await asyncio.to_thread(g.kill9_mid_revoke, member, ms / 1000)
        g.top_up(run.members_wanted)
        return f"SIGTERM + kill -9 after {ms} ms"
    if f is Fault.SIGTERM:
        code = await asyncio.to_thread(g.sigterm, member)
        run.members_wanted = max(1, run.members_wanted - 1)
        g.top_up(1)
        return f"SIGTERM member {member} (exit {code})"
    if f is Fault.ADD_MEMBER:
        run.members_wanted = min(3, run.members_wanted + 1)
        g.top_up(run.members_wanted)
        return f"members {len(g.live)}"
    if f in (Fault.KAFKA_RESTART, Fault.CONNECT_RESTART, Fault.MYSQL_RESTART):
        service = {Fault.KAFKA_RESTART: "kafka", Fault.CONNECT_RESTART: "connect"}.get(f, "mariadb")
        run.restarted.add(service)
        await asyncio.to_thread(run.stack.restart, service, slog)
        return f"{service} restarted"
    if f is Fault.ES_RESTART:
        run.restarted.add("elasticsearch")
        await asyncio.to_thread(run.stack.restart, "elasticsearch", slog, step.duration_s)
        return f"elasticsearch down {step.duration_s}s, restarted"
    if f is Fault.CONNECTOR_TASK_RESTART:
        code = await asyncio.to_thread(run.stack.restart_connector_task)
        return f"task restart HTTP {code}"
    if f is Fault.ES_429:
        run.proxy.reject_share = step.param / 100
        await asyncio.sleep(step.duration_s)
        run.proxy.reject_share = 0.0
        return (
            f"429 for {step.param}% of _bulk for {step.duration_s}s ({run.proxy.rejected} so far)"
        )
    if f is Fault.ES_WRITE_BLOCK:
        await asyncio.to_thread(run.stack.write_block, run.index, True)
        try:
            await asyncio.sleep(step.duration_s)
        finally:
            await asyncio.to_thread(run.stack.write_block, run.index, False)
        return f"write block {step.duration_s}s"
    if f is Fault.MYSQL_KILL:
        n = await asyncio.to_thread(run.stack.kill_connections, run.settings.mysql.user)
        return f"killed {n} connections"
    if f is Fault.REPLAY_SAMPLE:
        n = await asyncio.to_thread(
            kafka_io.replay_sample,
            run.settings.kafka.bootstrap_servers,
            run.topic,
            run.start_offsets,
            step.param,
            run.rng,
            run.prefix,
        )
        return f"replayed {n} old events"
    if f is Fault.OFFSETS_RESET:
        await asyncio.to_thread(g.stop_all)
        await _reset_group(run)
        g.top_up(run.members_wanted)
        return "group reset to the run's start"
    if f is Fault.FANOUT_FREEZE:
        if run.fanout is None:
            raise AssertionError(f"{f} in a schedule without its articles")
        return await run.fanout.freeze(g, run.proxy)
    if f is Fault.HOSTILE:
        got = await asyncio.to_thread(
            kafka_io.produce_hostile, run.settings.kafka.bootstrap_servers, run.topic, run.prefix
        )
        run.hostile.extend(got)
        return f"{len(got)} hostile messages"
    raise AssertionError(f"no injector for {f}")  # pragma: no cover


async def _reset_group(run: RunState) -> None:
    """`offsets reset --to <the run's start time>` once the group has no members left."""
    for _ in range(120):
        try:
            await asyncio.to_thread(offsets.reset, run.settings, run.started_at, dry_run=False)
            return
        except OperationRefused:  # the members' leave is not seen yet
            await asyncio.sleep(0.5)
    raise AssertionError("the group never became idle for the offsets reset")
