"""Runs one schedule: members, writers and faults together, then recovery, quiescence and the
checks. Returns a `Result`; its `line` is the schedule's summary line."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
import uuid
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from searchsync.config import load_settings
from searchsync.mysql.pool import create_pool
from searchsync.search.client import make_es_client

from tests.faults import checker, evidence, fanout, inject, kafka_io, relays
from tests.faults.member_logs import ARTICLE_TOPIC
from tests.faults.members import Group
from tests.faults.proxy import Es429Proxy
from tests.faults.schedule import Fault, Schedule
from tests.faults.services import SERVICES, Stack, wait
from tests.faults.workload import WorkloadStats, run_workload
from tests.integration.consumer_harness import prepare_index

TOPIC = "outbox.event.wiki_page"
QUIESCE_DEADLINE_S = 240.0


@dataclass(slots=True)
class Result:
    seed: int
    faults: str
    ok: bool = False
    problems: list[str] = field(default_factory=list)
    rows: int = 0
    hard_deleted: int = 0
    divergent: int = -1
    resurrected: int = -1
    hostile: int = 0
    dead_lettered_ok: int = 0
    consumed: int = 0
    accounted: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    workload: dict[str, object] = field(default_factory=dict)
    relay: dict[str, int] = field(default_factory=dict)  # relays started, rows per status
    articles: dict[str, int] = field(default_factory=dict)  # a fan-out schedule's article check
    seconds: float = 0.0
    log_dir: str = ""

    @property
    def line(self) -> str:
        verdict = "PASS" if self.ok else f"FAIL ({'; '.join(self.problems)[:300]})"
        return (
            f"seed={self.seed} faults={self.faults} rows={self.rows} hard_deleted="
            f"{self.hard_deleted} divergent={self.divergent} resurrected={self.resurrected} "
            f"dlq={self.dead_lettered_ok}/{self.hostile} offsets={self.accounted}/"
            f"{self.consumed}{self._relay_part}{self._articles_part} {self.seconds:.0f}s {verdict}"
        )

    @property
    def _articles_part(self) -> str:
        a = self.articles
        if not a:
            return ""
        docs, rows, stale = a.get("documents", 0), a.get("rows", 0), a.get("stale", 0)
        return f" articles={docs}/{rows} stale_author={stale}"

    @property
    def _relay_part(self) -> str:
        r = self.relay
        if not r:
            return ""
        return (
            f" relays={r.get('relays', 0)} taken_back={r.get('taken_back', 0)}"
            f" outbox={r.get('published', 0)}/{r.get('rows', 0)}"
        )


def member_env(tag: str, es_url: str) -> dict[str, str]:
    return {
        "SEARCHSYNC_KAFKA_GROUP_ID": f"faults-{tag}",
        "SEARCHSYNC_KAFKA_DLQ_TOPIC": f"faults-{tag}.dlq",
        "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"faults{tag}",
        "SEARCHSYNC_ELASTICSEARCH_HOSTS": es_url,
        "SEARCHSYNC_ELASTICSEARCH_REQUEST_TIMEOUT_S": "10",
        "SEARCHSYNC_OBSERVABILITY_METRICS_PORT": "0",
        "SEARCHSYNC_PIPELINE_RETRY_BASE_DELAY_S": "0.05",
        "SEARCHSYNC_PIPELINE_RETRY_MAX_DELAY_S": "1",
        "SEARCHSYNC_PIPELINE_COMMIT_INTERVAL_S": "0.3",
        "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S": "15",
        "SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "6000",
        "SEARCHSYNC_KAFKA_POLL_BATCH_SIZE": "50",
        # the offsets evidence reads one line per event outcome; at INFO successes are one
        # "batch settled" line per batch, the per-event lines are DEBUG (docs/consumer.md, Logs)
        "SEARCHSYNC_OBSERVABILITY_LOG_LEVEL": "DEBUG",
        # as deploy/ runs the group: the members restart a FAILED Debezium task (a schedule of
        # the volume run: the task was started while MariaDB was down and Connect never
        # restarts it by itself)
        "SEARCHSYNC_CONNECT_RESTART_FAILED_TASKS": "true",
        "SEARCHSYNC_CONNECT_WATCH_INTERVAL_S": "5",
    }


async def run_schedule(schedule: Schedule, stack: Stack, log_root: Path) -> Result:
    t0 = time.monotonic()
    tag = f"{schedule.seed}x{uuid.uuid4().hex[:6]}"
    log_dir = log_root / f"seed-{schedule.seed}"
    log_dir.mkdir(parents=True, exist_ok=True)
    result = Result(schedule.seed, schedule.describe(), log_dir=str(log_dir))
    proxy = Es429Proxy(*_host_port(stack.es_url), seed=schedule.seed)
    await proxy.start()
    env = member_env(tag, proxy.url)
    rig = None
    if schedule.relays:  # its own database and topic: tests/faults/relays.py
        bootstrap = load_settings(os.environ).kafka.bootstrap_servers
        rig = await asyncio.to_thread(relays.RelayRig.open, bootstrap, tag, log_dir, env)
        env = rig.env
    freeze = any(s.fault is Fault.FANOUT_FREEZE for s in schedule.steps)
    if freeze:  # the article and author topics, the article projector
        env.update(fanout.member_env(TOPIC))
    settings = load_settings({**os.environ, **env})
    await prepare_index(settings)
    index = f"{settings.alias('wiki_page')}_v1"
    # deleted versions forgotten after 1 s: stale replays meet only the tombstones
    stack.set_index(index, {"index.gc_deletes": "1s"})
    started_at = datetime.now(UTC)
    topic = rig.topic if rig else TOPIC
    starts = kafka_io.start_at_end(settings)  # every topic of the group
    group = Group(env, log_dir)
    run = inject.RunState(
        settings, stack, group, proxy, index, topic, f"f{tag}-", starts[topic],
        started_at, log_dir, random.Random(schedule.seed), schedule.members, relay=rig,
        topics=tuple(starts),
    )  # fmt: skip
    pool = await create_pool(
        host=settings.mysql.host,
        port=settings.mysql.port,
        user=os.environ.get("APP_DB_USER", "searchsync_app"),
        password=os.environ.get("APP_DB_PASSWORD", "searchsync_app"),
        database=settings.mysql.database,
        minsize=1,
        maxsize=8,
    )
    run.pool = pool
    es = make_es_client(load_settings(os.environ))
    if freeze:
        parts = len(starts[ARTICLE_TOPIC])
        run.fanout = await fanout.FanoutRig.open(settings, pool, es, run.prefix, parts)
    stop = asyncio.Event()
    stats = WorkloadStats()
    try:
        group.top_up(schedule.members)
        if rig is not None:
            await asyncio.to_thread(rig.start, schedule.relays)
        if run.fanout is not None:  # before the faults: the freeze needs its articles indexed
            result.steps.append(f"setup: {await run.fanout.seed()}")
        t_faults = time.monotonic()  # the schedule's offsets count from here
        writers = asyncio.create_task(
            run_workload(pool, run.prefix, schedule.workload_seed, stop, stats)
        )
        await _run_steps(schedule, run, result, t_faults)
        await asyncio.sleep(max(0.0, schedule.window_s - (time.monotonic() - t_faults)))
        stop.set()
        try:
            await asyncio.wait_for(writers, 60)
        except Exception as exc:  # the writers must survive every fault
            result.problems.append(f"the workload stopped: {type(exc).__name__}: {exc}")
        await asyncio.to_thread(_recover, run, result)
        await _quiesce(run, pool, es, result)
        await _final_evidence(run, pool, es, result)
        if not result.problems:  # a failed run's index stays, for the post-mortem
            await es.indices.delete(index=index)
            if run.fanout is not None:
                await es.indices.delete(index=run.fanout.index)
    except Exception as exc:  # a broken run is a failed schedule, with its logs kept
        result.problems.append(f"{type(exc).__name__}: {exc}")
    finally:
        stop.set()
        group.close()
        await proxy.close()
        await es.close()
        pool.close()
        await pool.wait_closed()
        if run.fanout is not None:
            await run.fanout.close()
        if rig is not None:  # a failed run's database and topic stay, for the post-mortem
            await asyncio.to_thread(rig.close, drop=not result.problems)
    result.workload = asdict(stats)
    result.seconds = time.monotonic() - t0
    result.ok = not result.problems
    with (log_root / "results.jsonl").open("a") as f:  # every run keeps what it saw
        f.write(json.dumps(asdict(result)) + "\n")
    return result


async def _run_steps(schedule: Schedule, run: inject.RunState, result: Result, t0: float) -> None:
    for step in schedule.steps:
        await asyncio.sleep(max(0.0, step.at_s - (time.monotonic() - t0)))
        what = await inject.apply(step, run)
        result.steps.append(f"{time.monotonic() - t0:.1f}s {step.fault.value}: {what}")


def _recover(run: inject.RunState, result: Result) -> None:
    """Undo what may still be in force and wait for every service to be ready (with the
    scripts' deadlines); the connector must be RUNNING again on its own."""
    run.proxy.reject_share = 0.0
    run.proxy.delay_s = 0.0
    for service in SERVICES:  # only what a step restarted: a stack it never touched stays as is
        if service not in run.restarted:
            continue
        if service == "connect" and run.stack.connector_state()[0] != "HTTP 0":
            continue  # up: `connect.sh start` would also PUT the connector's config again
        run.stack.script(service, "start", run.log_dir / "services.log")
    run.stack.write_block(run.index, False)
    if run.relay is not None:  # no connector in this run
        run.relay.group.top_up(max(1, run.relay.wanted))
        run.group.top_up(max(1, run.members_wanted))
        return
    try:
        wait(lambda: run.stack.connector_state()[1] == ["RUNNING"], 90, "the connector RUNNING")
    except AssertionError:
        result.problems.append(
            f"connector not RUNNING after the faults: {run.stack.connector_state()}"
        )
        run.stack.restart_connector_task()
    run.group.top_up(max(1, run.members_wanted))


async def _quiesce(run: inject.RunState, pool: object, es: object, result: Result) -> None:
    """Wait until the group has committed the topic's end and the index equals the truth."""
    deadline = time.monotonic() + QUIESCE_DEADLINE_S
    bootstrap, group = run.settings.kafka.bootstrap_servers, run.settings.kafka.group_id
    last = ""
    while time.monotonic() < deadline:
        if run.relay is not None:  # every outbox row published first
            unsettled = await relays.unsettled(pool)
            if unsettled:
                last = unsettled
                run.relay.group.top_up(1)
                await asyncio.sleep(1.0)
                continue
        lag = await asyncio.to_thread(kafka_io.lag, bootstrap, group, run.topics)
        if lag == 0:
            report = await checker.check(pool, es, run.settings.alias("wiki_page"), run.prefix)  # type: ignore[arg-type]
            settled, why = True, ""
            if report.divergent == 0 and run.fanout is not None:  # and the fan-out's articles
                settled, why = await run.fanout.settled()
            if report.divergent == 0 and settled:
                return
            last = why or f"divergent {report.divergent}: {report.examples[:3]}"
        else:
            last = f"lag {lag}"
        run.group.top_up(1)
        await asyncio.sleep(1.0)
    result.problems.append(f"no quiescence in {QUIESCE_DEADLINE_S:.0f}s ({last})")


async def _final_evidence(run: inject.RunState, pool: object, es: object, result: Result) -> None:
    if run.relay is not None:
        result.relay, problems = await relays.final_evidence(run.relay, pool)
        result.problems.extend(problems)
    stopped = await asyncio.to_thread(run.group.stop_all)
    # a member SIGTERMed while still importing (no "searchsync running" yet) dies of the
    # signal before it has a handler; it had consumed nothing: not a failed shutdown
    bad = [
        (m.number, c)
        for m, c in stopped
        if c != 0 and b"searchsync running" in m.log_path.read_bytes()
    ]
    if bad:
        result.problems.append(f"a member's graceful stop exited (member, code): {bad}")
    report = await checker.check(pool, es, run.settings.alias("wiki_page"), run.prefix)  # type: ignore[arg-type]
    result.rows, result.hard_deleted = report.rows, report.hard_deleted
    result.divergent, result.resurrected = report.divergent, report.resurrected
    if report.divergent or report.resurrected:
        result.problems.append(f"divergent: {report.examples}")
    if run.fanout is not None:
        articles, result.articles = await run.fanout.evidence()
        result.divergent += articles.divergent
        result.resurrected += articles.resurrected
        if articles.divergent or articles.resurrected:
            result.problems.append(f"articles divergent: {articles.examples}")
    bootstrap, group = run.settings.kafka.bootstrap_servers, run.settings.kafka.group_id
    final = await asyncio.to_thread(
        kafka_io.committed, bootstrap, group, run.topic, list(run.start_offsets)
    )
    outcomes = evidence.read_outcomes(run.group.logs)
    acc = evidence.account(run.topic, run.start_offsets, final, outcomes)
    result.consumed, result.accounted = acc.consumed, acc.accounted
    result.outcomes = dict(outcomes.results)
    if acc.missing:
        result.problems.append(f"offsets without an outcome: {list(acc.missing)}")
    dead = await asyncio.to_thread(
        kafka_io.dead_letters, run.settings.kafka.client_config(), run.settings.kafka.dlq_topic
    )
    problems = evidence.check_dead_letters(run.hostile, dead)
    result.hostile = len(run.hostile)
    result.dead_lettered_ok = len(run.hostile) - len(problems)
    if problems:
        result.problems.append(f"hostile messages not dead-lettered: {problems}")


def _host_port(url: str) -> tuple[str, int]:
    hostport = url.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    return host, int(port)
