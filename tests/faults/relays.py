"""The relay half of a fault run: a schedule whose outbox `searchsync relay run` publishes.

A relay schedule runs on a scratch database of its own (``faults_<tag>``, made by
deploy/local/migrate.sh, dropped after a passing run) and a topic of its own
(``faults-<tag>.wiki_page``). Debezium captures only the stack's own database
(``database.include.list``), so every event of the run reaches Kafka only through the relays
under test, and the relays never claim another run's rows
(tests/faults/README.md, "Relay schedules").

The relay faults: kill -9 at a random point, kill -9 while the relay holds a claim, one more
relay, and a relay stopped (SIGSTOP) past the claim timeout, so a peer takes its rows back.
"""

from __future__ import annotations

import asyncio
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiomysql
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from searchsync.clock import Deadline
from searchsync.kafka.admin import ConfluentKafkaAdmin

from tests.faults.members import MAX_MEMBERS, Group, Member
from tests.faults.schedule import RELAY_CLAIM_TIMEOUT_S, Fault, Step
from tests.scratch import create_database, drop_database

PARTITIONS: Final = 3
_TOOK_BACK: Final = re.compile(rb"took back (\d+) timed-out claims")
_MID_CLAIM_WAIT_S: Final = 20.0


def relay_env(tag: str, database: str, topic: str) -> dict[str, str]:
    """Settings of the run's members and relays on the scratch database and topic."""
    return {
        "SEARCHSYNC_MYSQL_DATABASE": database,
        "SEARCHSYNC_KAFKA_TOPICS": topic,
        "SEARCHSYNC_RELAY_ENABLED": "true",
        "SEARCHSYNC_RELAY_TOPIC_TEMPLATE": f"faults-{tag}.{{type}}",
        "SEARCHSYNC_RELAY_BATCH_SIZE": "20",
        "SEARCHSYNC_RELAY_POLL_INTERVAL_S": "0.05",
        "SEARCHSYNC_RELAY_CLAIM_TIMEOUT_S": str(RELAY_CLAIM_TIMEOUT_S),
        "SEARCHSYNC_RELAY_PUBLISH_TIMEOUT_S": str(RELAY_CLAIM_TIMEOUT_S - 1),
        "SEARCHSYNC_RELAY_STATS_INTERVAL_S": "1",
        # no connector in this run: the members leave Kafka Connect alone
        "SEARCHSYNC_CONNECT_RESTART_FAILED_TASKS": "false",
    }


@dataclass(slots=True)
class RelayRig:
    """The scratch database, the topic and the relay processes of one relay schedule."""

    bootstrap: str
    database: str
    topic: str
    env: dict[str, str]
    group: Group
    wanted: int

    @classmethod
    def open(cls, bootstrap: str, tag: str, log_dir: Path, base_env: Mapping[str, str]) -> RelayRig:
        """Create the database and the topic (blocking); no relay runs yet."""
        database, topic = f"faults_{tag}", f"faults-{tag}.wiki_page"
        with (log_dir / "services.log").open("ab") as out:
            create_database(database, log=out)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for f in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            f.result(timeout=60)
        ConfluentKafkaAdmin({"bootstrap.servers": bootstrap}).wait_for_leaders(
            topic, Deadline(time.monotonic, 60.0)
        )
        env = {**base_env, **relay_env(tag, database, topic)}
        group = Group(env, log_dir, command=("relay", "run"), name="relay")
        return cls(bootstrap, database, topic, env, group, 0)

    def start(self, n: int, *, deadline_s: float = 120.0) -> None:
        """Have `n` relays running and wait until each claims (its "publishing" line), so that
        the schedule's faults meet running relays, not starting ones (blocking)."""
        self.wanted = n
        self.group.top_up(n)
        end = time.monotonic() + deadline_s
        while not all(b"publishing" in m.log_path.read_bytes() for m in self.group.live):
            if time.monotonic() > end or len(self.group.live) < n:
                raise AssertionError(f"the relays did not start within {deadline_s}s")
            time.sleep(0.1)

    def close(self, *, drop: bool) -> None:
        """Kill what still runs; drop the database and the topic unless a failed run keeps them."""
        self.group.close()
        if not drop:
            return
        drop_database(self.database)
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for f in admin.delete_topics([self.topic]).values():
            f.result(timeout=60)

    def stop(self) -> list[tuple[Member, int | None]]:
        """SIGTERM every relay; (relay, exit code) of those that were running."""
        stopped = self.group.stop_all()
        return [(m, c) for m, c in stopped if b"publishing" in m.log_path.read_bytes()]

    def taken_back(self) -> int:
        """Rows the relays took back from timed-out claims, as their logs say."""
        return sum(
            int(n) for path in self.group.logs for n in _TOOK_BACK.findall(path.read_bytes())
        )


async def final_evidence(rig: RelayRig, pool: aiomysql.Pool) -> tuple[dict[str, int], list[str]]:
    """Stop the relays; what they did, and the problems: a relay's graceful stop must exit 0,
    and every outbox row of the run must be PUBLISHED."""
    problems = []
    stopped = await asyncio.to_thread(rig.stop)
    bad = [(m.number, c) for m, c in stopped if c != 0]
    if bad:
        problems.append(f"a relay's graceful stop exited (relay, code): {bad}")
    statuses = await outbox_statuses(pool)
    if set(statuses) - {"PUBLISHED"}:
        problems.append(f"outbox rows not published: {statuses}")
    seen = {s.lower(): n for s, n in statuses.items()}
    seen.update(relays=rig.group.started, taken_back=rig.taken_back(), rows=sum(statuses.values()))
    return seen, problems


async def unsettled(pool: aiomysql.Pool) -> str:
    """What keeps the outbox from quiescence: rows not yet PUBLISHED ("" when none)."""
    statuses = await outbox_statuses(pool)
    return f"outbox {statuses}" if set(statuses) - {"PUBLISHED"} else ""


async def outbox_statuses(pool: aiomysql.Pool) -> dict[str, int]:
    """The run's outbox rows per status (the scratch table holds only this run's rows)."""
    async with pool.acquire() as conn:
        await conn.begin()
        async with conn.cursor() as cur:
            await cur.execute("SELECT status, COUNT(*) FROM search_outbox GROUP BY status")
            rows = await cur.fetchall()
        await conn.commit()
    return {str(r[0]): int(r[1]) for r in rows}


async def apply(step: Step, rig: RelayRig, pool: aiomysql.Pool) -> str:
    """Apply a relay fault (`Fault.RELAY_*`); what was done, for the run's record."""
    g, (index, ms) = rig.group, divmod(step.param, 10_000)
    if step.fault is Fault.RELAY_KILL9:
        m = await asyncio.to_thread(g.kill9, index)
        await asyncio.sleep(ms / 1000)
        g.top_up(rig.wanted)
        return f"kill -9 relay {m.number if m else None}, restart after {ms} ms"
    if step.fault is Fault.RELAY_KILL9_MID_CLAIM:
        what = await _kill_mid_claim(rig, pool, index)
        await asyncio.sleep(ms / 1000)
        g.top_up(rig.wanted)
        return f"{what}, restart after {ms} ms"
    if step.fault is Fault.RELAY_ADD:
        rig.wanted = min(MAX_MEMBERS, rig.wanted + 1)
        g.top_up(rig.wanted)
        return f"relays {len(g.live)}"
    if step.fault is Fault.RELAY_STALL:
        # a running peer to take the stalled relay's claims back
        await asyncio.to_thread(rig.start, max(2, rig.wanted))
        caught = await _freeze_holder(rig, pool, index)
        m, held = caught or (g.live[index % len(g.live)], 0)
        m.signal(signal.SIGSTOP)
        try:
            await asyncio.sleep(step.duration_s)
        finally:
            m.signal(signal.SIGCONT)
        return f"relay {m.number} stopped {step.duration_s}s holding {held} claimed rows"
    raise AssertionError(f"not a relay fault: {step.fault}")  # pragma: no cover


async def _kill_mid_claim(rig: RelayRig, pool: aiomysql.Pool, index: int) -> str:
    """kill -9 a relay caught holding a claim; a relay at a random point if none is caught."""
    caught = await _freeze_holder(rig, pool, index)
    if caught is not None:
        m, held = caught
        await asyncio.to_thread(rig.group.kill9_member, m)
        return f"kill -9 relay {m.number} mid-claim, {held} rows left PROCESSING"
    gone: Member | None = await asyncio.to_thread(rig.group.kill9, index)
    number = gone.number if gone else None
    return f"no claim seen in {_MID_CLAIM_WAIT_S:.0f}s: kill -9 relay {number}"


async def _freeze_holder(
    rig: RelayRig, pool: aiomysql.Pool, index: int
) -> tuple[Member, int] | None:
    """SIGSTOP a relay caught holding PROCESSING rows (a claim committed, not yet marked): seen
    holding rows, stopped, and still holding them once stopped (else resumed, and watched
    again). The relay, stopped, and the rows it holds; None if none is caught within
    `_MID_CLAIM_WAIT_S`."""
    deadline = time.monotonic() + _MID_CLAIM_WAIT_S
    while time.monotonic() < deadline:
        live = {m.proc.pid: m for m in rig.group.live}
        holders = [pid for pid in await _holders(pool) if pid in live]
        if holders:
            m = live[holders[index % len(holders)]]
            m.signal(signal.SIGSTOP)
            held = await _claimed_by(pool, m.proc.pid)
            if held:
                return m, held
            m.signal(signal.SIGCONT)  # it marked them meanwhile
        await asyncio.sleep(0.002)
    return None


async def _holders(pool: aiomysql.Pool) -> list[int]:
    """The pids of the relays holding PROCESSING rows (``locked_by`` is ``host:pid:random``)."""
    rows = await _select(pool, "SELECT DISTINCT locked_by FROM search_outbox WHERE status = %s")
    return sorted({int(str(r[0]).split(":")[-2]) for r in rows if r[0]})


async def _claimed_by(pool: aiomysql.Pool, pid: int) -> int:
    rows = await _select(
        pool,
        "SELECT COUNT(*) FROM search_outbox WHERE status = %s AND locked_by LIKE %s",
        f"%:{pid}:%",
    )
    return int(rows[0][0])


async def _select(pool: aiomysql.Pool, sql: str, *args: Any) -> list[Any]:
    async with pool.acquire() as conn:
        await conn.begin()
        async with conn.cursor() as cur:
            await cur.execute(sql, ("PROCESSING", *args))
            rows = list(await cur.fetchall())
        await conn.commit()
    return rows
