"""`searchsync status`: one screen for the whole system (library: `searchsync.ops.status`).
`searchsync wait`: read-your-writes from a shell (`searchsync.read`); exit 0 when the document
reached the revision (indexed, or with ``--searchable`` searchable), 1 when the timeout passed
first; either way the last revision seen is printed."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from searchsync.cli.args import chosen_type, command, number, positive_int, run_in, seconds
from searchsync.cli.dlq import dlq_topic
from searchsync.cli.output import describe_unreachable, elasticsearch_at, kafka_at, mysql_at, show
from searchsync.config import Settings
from searchsync.dlq.summary import summary
from searchsync.exit_codes import ExitCode
from searchsync.ops import status_probes as probes
from searchsync.ops.repair.generations import snapshot
from searchsync.ops.status import Probe, Section, StatusReport, gather, in_thread
from searchsync.projection.references import referenced_types
from searchsync.read import Until, wait_for_revision
from searchsync.runtime import Runtime


def register(commands: Any) -> None:
    about = "the whole system on one screen; exit 0 when healthy, 4 with the reasons otherwise"
    status = command(commands, "status", cmd_status, about)
    status.add_argument(
        "--consumer",
        action="append",
        metavar="URL",
        help="a consumer's metrics base URL to ask /healthz (repeatable;"
        " default: http://<observability.metrics_host>:<observability.metrics_port>)",
    )
    status.add_argument(
        "--timeout",
        type=seconds,
        default=15.0,
        metavar="SECONDS",
        help="how long each check may take; a service that does not answer in time is reported "
        "as that (default: 15)",
    )


def cmd_status(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    obs = settings.observability
    endpoints = args.consumer or [f"http://{obs.metrics_host}:{obs.metrics_port}"]
    report = run_in(runtime, lambda: _report(runtime, endpoints, args.timeout))
    code = ExitCode.OK if report.healthy else ExitCode.UNHEALTHY
    return show(args.json, report.as_json(), render(report), code=code)


async def _report(runtime: Runtime, endpoints: list[str], timeout_s: float) -> StatusReport:
    settings, registry = runtime.settings, runtime.registry
    fans_out = referenced_types(registry)  # some lookup fans out (docs/design.md, "Fan-out")

    async def outbox() -> Section:
        count, oldest = await (await runtime.tables()).outbox.stats()
        return probes.outbox_section(count, oldest)

    async def fanout() -> Section:
        stats = await (await runtime.tables()).fanout.stats(fans_out)
        return probes.fanout_section(stats, stuck_after_s=max(300.0, 5 * settings.fanout.lease_s))

    async def repair() -> Section:
        wheels = await snapshot((await runtime.tables()).wheel_state, list(registry.types()))
        return probes.repair_section(wheels, max_staleness_s=settings.repair.max_staleness_s)

    async def connector() -> Section:
        return probes.connector_section(await runtime.connect.status())

    async def relay() -> Section | None:
        store = (await runtime.tables()).relay
        if not settings.relay.enabled and not await store.claimed_any():
            return None  # Debezium publishes, and no relay ever claimed a row
        found = await store.status(settings.relay.claim_timeout_s)
        return probes.relay_section(found, settings.relay)

    def dlq_depth() -> Section:  # depth by code only: the replay history is `dlq summary`'s
        topic = dlq_topic(settings, runtime, timeout_s=timeout_s)
        return probes.dlq_section(summary(topic, ledger=None))

    async def recorded_lineage() -> dict[str, str]:
        return await (await runtime.tables()).lineage.recorded(settings.kafka.group_id)

    async def group() -> Section:
        try:  # the group's topic ids; MySQL's own sections say when it is away
            recorded = await asyncio.wait_for(recorded_lineage(), 0.5 * timeout_s)
        except Exception:
            recorded = None
        admin = runtime.kafka.admin(settings.kafka.client_config(), timeout_s=timeout_s)
        return await in_thread(probes.group_section, admin, settings, recorded)

    checks: list[tuple[str, Probe]] = [
        ("group", group),
        ("connector", connector),
        ("aliases", lambda: probes.aliases_section(search.admin, registry, settings.alias)),
        ("consumers", lambda: probes.consumers_section(endpoints, timeout_s=min(3.0, timeout_s))),
        ("outbox", outbox),
        *([("fanout", fanout)] if fans_out else []),
        ("relay", relay),
        ("dlq", lambda: in_thread(dlq_depth)),
        ("repair", repair),
    ]
    kafka, mysql = kafka_at(settings), mysql_at(settings)
    asks = {"group": kafka, "dlq": kafka, "aliases": elasticsearch_at(settings)}
    asks |= {"outbox": mysql, "fanout": mysql, "relay": mysql, "repair": mysql}
    search = runtime.search()
    return await gather(
        checks,
        timeout_s=timeout_s,
        asks=asks,
        explain=lambda exc: describe_unreachable(exc, settings),
    )


def register_wait(commands: Any) -> None:
    about = "wait until a revision of a document is indexed (or searchable)"
    wait = command(commands, "wait", cmd_wait, about, one_type=True)
    wait.add_argument("--id", required=True, dest="doc_id", help="the document (aggregate) id")
    wait.add_argument(
        "--revision", required=True, type=positive_int, help="the revision the write returned"
    )
    wait.add_argument(
        "--searchable",
        action="store_true",
        help="wait until a search sees it (default: until a get by id does)",
    )
    wait.add_argument(
        "--timeout",
        type=number(lambda v: 0 <= v < float("inf"), "expected seconds >= 0", "expected seconds"),
        default=10.0,
        metavar="S",
        help="seconds (default: 10)",
    )


def cmd_wait(args: argparse.Namespace, settings: Settings, runtime: Runtime) -> ExitCode:
    alias = settings.alias(chosen_type(runtime, args.type))
    result = run_in(
        runtime,
        lambda: wait_for_revision(
            runtime.search().aliased,
            alias,
            args.doc_id,
            args.revision,
            until=Until.SEARCHABLE if args.searchable else Until.INDEXED,
            timeout_s=args.timeout,
        ),
    )
    code = ExitCode.OK if result.reached else ExitCode.FAILURE
    return show(args.json, result.as_json(), [result.message], code=code)


def render(report: StatusReport) -> list[str]:
    """The report for a person: problems first, then one block per section headed by the worst
    of what it found: PROBLEM, else WARNING, else ok."""
    lines = [f"searchsync status: {'healthy' if report.healthy else 'UNHEALTHY'}"]
    lines += [f"  problem: {p}" for p in report.problems]
    lines += [f"  warning: {w}" for w in report.warnings]
    for s in report.sections:
        verdict = "PROBLEM" if s.problems else "WARNING" if s.warnings else "ok"
        lines.append(f"{s.name}: {verdict}")
        lines += [f"  {line}" for line in _describe(s)]
    return lines


def _describe(s: Section) -> list[str]:
    d = s.data
    if s.name == "group" and d:
        return [f"group {d['group']}: {len(d['members'])} member(s), lag {d['lag']}"] + [
            f"{p['topic']}/{p['partition']}: committed {p['committed']}, end {p['end']},"
            f" lag {p['lag']}"
            for p in d["partitions"]
        ]
    if s.name == "aliases" and d:
        return [
            f"{a['alias']} -> {a['write_index']} (schema {a.get('schema_version')},"
            f" {a.get('docs')} docs); read alias {a['read_alias']} ->"
            f" {', '.join(a['read_indices']) or 'nothing'}"
            if a["write_index"]
            else f"{a['alias']}: no write index"
            for a in d["aliases"]
        ]
    if s.name == "consumers" and d:
        return [
            f"{c['endpoint']}: "
            + ("unreachable" if not c["reachable"] else "ready" if c["ready"] else "NOT ready")
            for c in d["consumers"]
        ]
    if s.name == "connector" and d:
        tasks = ", ".join(f"task {t['id']} {t['state']}" for t in d["tasks"]) or "no tasks"
        return [f"{d['name']}: {d['state']} ({tasks})"]
    if s.name == "outbox" and d:
        return [f"{d['rows']} row(s), oldest {d['oldest_created_at'] or '-'}"]
    if s.name == "fanout" and d:
        idle = d["oldest_untouched_seconds"]
        return [
            f"{d['pending']} pending ({d['appended_pending']} REBUILDs appended so far"
            f"{'' if idle is None else f', oldest untouched {idle}s'}), {d['done']} done"
        ]
    if s.name == "relay" and d:
        age = d["oldest_pending_age_seconds"]
        holders = ", ".join(f"{h} {n}" for h, n in d["holders"].items()) or "none"
        return [
            f"{d['table']} ({'enabled' if d['enabled'] else 'relay.enabled = false'}):"
            f" {d['pending']} pending ({d['retrying']} waiting to retry), {d['processing']}"
            f" processing, {d['published']} published, {d['dead']} dead;"
            f" oldest pending {'-' if age is None else f'{age:.0f}s'}",
            f"claims: {holders}; {d['stale_claims']} older than {d['claim_timeout_seconds']:g}s",
        ]
    if s.name == "dlq" and d:
        codes = ", ".join(f"{k} {v}" for k, v in d["by_code"].items()) or "none"
        return [f"{d['dlq_topic']}: {d['total']} dead letter(s) ({codes})"]
    if s.name == "repair" and d:
        return [_describe_wheel(w) for w in d["wheels"]]
    return []


def _describe_wheel(w: dict[str, Any]) -> str:
    if w["epoch"] is None:
        return f"{w['aggregate_type']}: never repaired"
    found = ", ".join(f"{k} {v}" for k, v in w["last_counts"].items() if v) or "no drift"
    age = w["oldest_age_seconds"]
    return (
        f"{w['aggregate_type']}: epoch {w['epoch']}, {w['buckets_complete']}/{w['bucket_count']}"
        f" buckets scanned, last {w['last_complete_at'] or '-'}, oldest"
        f" {'-' if age is None else f'{age}s ago'} (max {w['max_staleness_seconds']:.0f}s);"
        f" last scans: {found}"
    )
