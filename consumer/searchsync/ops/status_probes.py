"""The probes of `searchsync status`, one per part of the system: each returns a `Section`, and
raises only when it could not look (`gather` makes that the section's problem)."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import aiohttp
import orjson

from searchsync.config import RelaySettings, Settings
from searchsync.dlq.summary import DlqSummary
from searchsync.kafka.admin import KafkaAdmin
from searchsync.kafka.connect import ConnectorStatus
from searchsync.kafka.gaps import RECOVERY
from searchsync.mysql.fanout import FanoutStats
from searchsync.naming import read_alias_name
from searchsync.ops.offsets import lineage_mismatches, partition_offsets
from searchsync.ops.repair.generations import WheelSnapshot
from searchsync.ops.status import Section
from searchsync.projection import ProjectorRegistry
from searchsync.relay.port import RelayStatus
from searchsync.search.port import IndexAdmin


def group_section(
    admin: KafkaAdmin, settings: Settings, recorded: Mapping[str, str] | None = None
) -> Section:
    """Members of the group, and each partition's committed offset, end and lag; a gap or a
    lineage mismatch (against the group's `recorded` topic ids, when given) is a problem."""
    group = settings.kafka.group_id
    members = admin.active_members(group)
    rows = partition_offsets(admin, settings)
    lag = sum(r.lag for r in rows)
    problems: list[str] = []
    warnings: list[str] = []
    if not members:
        problems.append(f"no consumer is running in group {group!r} (start `searchsync run`)")
    if len(members) > len(rows):
        warnings.append(
            f"{len(members)} members but {len(rows)} partitions: {len(members) - len(rows)}"
            " member(s) sit idle (raise the topics' partition count to scale out)"
        )
    if lag:
        warnings.append(f"lag {lag} event(s)")
    gaps = {(r.topic, r.partition): r.gap() for r in rows}
    problems.extend(f"{g.describe()}; {RECOVERY}" for g in gaps.values() if g is not None)
    ids = admin.topic_ids(sorted({r.topic for r in rows})) if recorded else {}
    lineage = lineage_mismatches(rows, recorded or {}, ids)
    problems.extend(f"{m.describe()}; {RECOVERY}" for m in lineage.values())
    data = {
        "group": group,
        "members": members,
        "lag": lag,
        "partitions": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "committed": r.committed,
                "end": r.high,
                "lag": r.lag,
                "blocked_gap": (g.missing if (g := gaps[(r.topic, r.partition)]) else None),
                "lineage_mismatch": (r.topic, r.partition) in lineage,
            }
            for r in rows
        ],
    }
    return Section("group", data, tuple(problems), tuple(warnings))


async def aliases_section(
    admin: IndexAdmin, registry: ProjectorRegistry, alias_for: Callable[[str], str]
) -> Section:
    """Where each type's alias writes, with its schema version and doc count, and where its read
    alias points (anywhere but the write index is a problem: readers would see another index)."""
    problems: list[str] = []
    found: list[dict[str, Any]] = []
    for kind in registry.types():
        alias = alias_for(kind)
        want = registry.get(kind).schema_version
        indices = await admin.list_indices(alias)
        target = next((i for i in indices if i.is_write_index), None)
        if target is None:
            problems.append(f"alias {alias} has no write index (run `searchsync index init`)")
            found.append({"aggregate_type": kind, "alias": alias, "write_index": None})
            continue
        read = read_alias_name(alias)
        reads = [i.name for i in indices if i.read_aliased]
        if reads != [target.name]:
            problems.append(
                f"read alias {read} points at {reads or 'nothing'}, not at {target.name}"
                " (run `searchsync index init`)"
            )
        if target.schema_version is not None and target.schema_version != want:
            problems.append(
                f"{alias} writes to {target.name} (schema {target.schema_version}) but the"
                f" projector is schema {want}: consumers of this release are fenced"
            )
        found.append(
            {
                "aggregate_type": kind,
                "alias": alias,
                "write_index": target.name,
                "schema_version": target.schema_version,
                "projector_schema_version": want,
                "docs": target.docs,
                "indices": [i.name for i in indices],
                "read_alias": read,
                "read_indices": reads,
            }
        )
    return Section("aliases", {"aliases": found}, tuple(problems))


async def consumers_section(endpoints: Sequence[str], *, timeout_s: float = 3.0) -> Section:
    """Each consumer's own /healthz: not ready (fenced, paused, stalled) is a problem."""
    problems: list[str] = []
    warnings: list[str] = []
    found: list[dict[str, Any]] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session:
        for base in endpoints:
            url = base.rstrip("/") + "/healthz"
            try:
                async with session.get(url) as response:  # 503: a consumer that is not ready
                    code, report = response.status, _json_object(await response.read())
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                why = str(exc) if not isinstance(exc, TimeoutError) else "timed out"
                warnings.append(f"{url} did not answer ({why}); is a consumer running there?")
                found.append({"endpoint": base, "reachable": False})
                continue
            ready = code == 200 and bool(report.get("ready"))
            reasons = [str(r) for r in report.get("reasons", [])]
            if not ready:
                problems.append(f"{base} not ready: {'; '.join(reasons) or f'HTTP {code}'}")
            found.append({"endpoint": base, "reachable": True, "ready": ready, "reasons": reasons})
    return Section("consumers", {"consumers": found}, tuple(problems), tuple(warnings))


def outbox_section(count: int, oldest: datetime | None, *, now: datetime | None = None) -> Section:
    """The outbox table's size and its oldest row (Debezium never deletes rows)."""
    data = {
        "rows": count,
        "oldest_created_at": None if oldest is None else oldest.isoformat(),
        "oldest_age_seconds": _age_s(oldest, now),
    }
    return Section("outbox", data)


def fanout_section(
    stats: FanoutStats, *, stuck_after_s: float, now: datetime | None = None
) -> Section:
    """The fan-out jobs pending and done; a pending job untouched for `stuck_after_s` is a
    warning (no member runs the fan-out worker, or it fails)."""
    idle = _age_s(stats.oldest_pending, now)
    data = {
        "pending": stats.pending,
        "done": stats.done,
        "appended_pending": stats.appended_pending,
        "oldest_untouched_seconds": idle,
    }
    stuck = idle is not None and idle > stuck_after_s
    warning = (
        f"a pending fan-out job has not moved for {idle}s: is a consumer with"
        " [fanout] enabled running?"
    )
    return Section("fanout", data, (), (warning,) if stuck else ())


def _age_s(at: datetime | None, now: datetime | None) -> int | None:
    """Whole seconds since `at` (naive: UTC)."""
    if at is None:
        return None
    return round(((now or datetime.now(UTC)) - at.replace(tzinfo=at.tzinfo or UTC)).total_seconds())


def relay_section(status: RelayStatus, relay: RelaySettings) -> Section:
    """The polling relay's rows (docs/relay.md): DEAD rows, claims past ``claim_timeout_s`` and
    a due row waiting longer than that are warnings."""
    c = status.counts
    warnings: list[str] = []
    if c.dead:
        warnings.append(
            f"{c.dead} DEAD outbox row(s) never published (`searchsync relay dead`, then"
            " `searchsync relay revive`)"
        )
    if status.stale_claims:
        warnings.append(
            f"{status.stale_claims} claim(s) older than relay.claim_timeout_s"
            f" {relay.claim_timeout_s:g}s, not taken back yet (is `searchsync relay run` running?)"
        )
    due = status.oldest_due_age_s
    if relay.enabled and due is not None and due > relay.claim_timeout_s:
        warnings.append(
            f"the oldest due row has waited {due:.0f}s for a relay"
            " (is `searchsync relay run` running?)"
        )
    data = {
        "enabled": relay.enabled,
        "table": relay.table,
        "pending": c.pending,
        "retrying": status.retrying,
        "processing": c.processing,
        "published": status.published,
        "dead": c.dead,
        "oldest_pending_age_seconds": _seconds(c.oldest_pending_age_s),
        "oldest_due_age_seconds": _seconds(due),
        "stale_claims": status.stale_claims,
        "claim_timeout_seconds": relay.claim_timeout_s,
        "holders": dict(sorted(status.holders.items())),
    }
    return Section("relay", data, (), tuple(warnings))


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def dlq_section(summary: DlqSummary) -> Section:
    """Dead letters by error code and type (a DLQ topic that does not exist yet holds none)."""
    warnings = (f"{summary.total} dead letter(s)",) if summary.total else ()
    return Section("dlq", summary.as_json(), (), warnings)


def repair_section(
    wheels: Mapping[str, WheelSnapshot], *, max_staleness_s: float, now: datetime | None = None
) -> Section:
    """The repair wheel's last rotation per type: its epoch, the newest and the oldest complete
    bucket scans, and the last scans' findings. A type never repaired, a bucket never scanned
    completely, or an oldest scan older than ``repair.max_staleness_s`` is a warning."""
    now = now or datetime.now(UTC)
    warnings: list[str] = []
    found: list[dict[str, Any]] = []
    for kind, wheel in wheels.items():
        if wheel.epoch is None:
            warnings.append(f"{kind}: never repaired (run `searchsync repair --once`)")
            found.append({"aggregate_type": kind, "epoch": None})
            continue
        states = list(wheel.buckets.values())
        done = [s.last_complete_at for s in states if s.last_complete_at is not None]
        never = len(states) - len(done)
        oldest = min(done) if done else None
        age = None if oldest is None else (now - oldest).total_seconds()
        counts: Counter[str] = Counter()
        for st in states:
            counts.update({k: int(v) for k, v in st.last_counts.items()})
        if never:
            warnings.append(
                f"{kind}: {never} of {len(states)} bucket(s) never scanned completely"
                " (run `searchsync repair --once`)"
            )
        elif age is not None and age > max_staleness_s:
            warnings.append(
                f"{kind}: oldest bucket scanned {age:.0f}s ago, over repair.max_staleness_s"
                f" {max_staleness_s:.0f}s (is `searchsync repair --daemon` running?)"
            )
        found.append(
            {
                "aggregate_type": kind,
                "epoch": wheel.epoch.epoch,
                "bucket_count": wheel.epoch.bucket_count,
                "buckets_complete": len(done),
                "buckets_never_scanned": never,
                "buckets_running": sum(1 for st in states if st.running_generation is not None),
                "last_complete_at": max(done).isoformat() if done else None,
                "oldest_complete_at": None if oldest is None else oldest.isoformat(),
                "oldest_age_seconds": None if age is None else round(age),
                "max_staleness_seconds": max_staleness_s,
                "last_counts": dict(sorted(counts.items())),
            }
        )
    return Section("repair", {"wheels": found}, (), tuple(warnings))


def connector_section(status: ConnectorStatus) -> Section:
    """The Debezium connector and its tasks (Kafka Connect REST): not RUNNING is a problem."""
    return Section("connector", status.as_json(), tuple(status.problems()))


def _json_object(body: bytes) -> Mapping[str, Any]:
    with contextlib.suppress(orjson.JSONDecodeError):
        if isinstance(value := orjson.loads(body), dict):
            return value
    return {}
