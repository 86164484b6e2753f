"""The consumer group's Kafka offsets: where it stands, and `reset` to replay history (refused
while the group has active members: their next commit would overwrite it)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import orjson

from searchsync.config import Settings
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.kafka.admin import AdminFactory, ConfluentKafkaAdmin, KafkaAdmin
from searchsync.kafka.gaps import RECONCILE, HistoryGap
from searchsync.kafka.lineage import LineageMismatch, lineage_changes, mismatch
from searchsync.mysql.lineage import GapAck
from searchsync.projection.topics import consumed_topics
from searchsync.types import TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    """One partition of `reset`'s `topic` (left out: the group's one topic) to one offset."""

    partition: int
    offset: int


ResetTarget = str | int | datetime | PartitionOffset
""""earliest", "latest", one offset for every selected partition, a time (aware: per partition
the first offset at or after it, the end when every message is older), or one partition's offset."""


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """One partition as the group sees it. `committed` is None when the group never committed;
    `lag` then counts from where the group would start (``auto_offset_reset``)."""

    topic: str
    partition: int
    committed: int | None
    low: int
    high: int
    lag: int

    def gap(self) -> HistoryGap | None:
        """The records deleted before the group read them (None: nothing lost)."""
        if self.committed is None or self.committed >= self.low:
            return None
        return HistoryGap(self.topic, self.partition, self.committed, self.low)


@dataclass(frozen=True, slots=True)
class ResetStep:
    topic: str
    partition: int
    current: int | None
    target: int


@dataclass(frozen=True, slots=True)
class ResetReport:
    group: str
    target: str  # the target as given: earliest, latest, offset N, a time, topic/partition@N
    dry_run: bool
    active_members: list[str]
    steps: list[ResetStep]
    accepted: list[GapAck]  # the gaps this reset acknowledged (or would)
    lineage: list[LineageMismatch]  # the lineage mismatches it accepted (or would)


def gap_fields(ack: GapAck) -> dict[str, object]:
    """An accepted gap as JSON fields (the commit metadata and ``offsets reset --json``)."""
    return {**asdict(ack), "accepted_at": ack.accepted_at.isoformat(timespec="seconds")}


def subscribed_topics(admin: KafkaAdmin, settings: Settings) -> list[str]:
    """The subscribed topics that exist now (a regex is matched against the cluster's topics)."""
    kafka = settings.kafka
    existing = admin.topics()
    if kafka.topic_regex is not None:
        return sorted(t for t in existing if re.match(kafka.topic_regex, t))
    return [t for t in consumed_topics(settings) if t in existing]


def partition_offsets(
    admin: KafkaAdmin, settings: Settings, topics: Sequence[str] | None = None
) -> list[PartitionOffsets]:
    """Committed offset, watermarks and lag of every partition of `topics` (default: the
    subscribed ones) for the group."""
    rows = []
    earliest = settings.kafka.auto_offset_reset == "earliest"
    for topic in subscribed_topics(admin, settings) if topics is None else topics:
        marks = admin.watermarks(topic)
        committed = admin.committed(settings.kafka.group_id, [(topic, p) for p in marks])
        for partition, m in marks.items():
            offset = committed.get((topic, partition))
            start = offset if offset is not None else m.low if earliest else m.high
            rows.append(
                PartitionOffsets(topic, partition, offset, m.low, m.high, max(0, m.high - start))
            )
    return sorted(rows, key=lambda r: (r.topic, r.partition))


def lineage_mismatches(
    rows: Sequence[PartitionOffsets], recorded: Mapping[str, str], ids: Mapping[str, str]
) -> dict[TopicPartition, LineageMismatch]:
    """The partitions of `rows` that contradict their topic's `recorded` id (`ids`: the ids now)."""
    return {
        (r.topic, r.partition): m
        for r in rows
        if (
            m := mismatch(
                r.topic, r.partition, r.committed, r.high, recorded.get(r.topic), ids.get(r.topic)
            )
        )
    }


def plan_reset(
    rows: Sequence[PartitionOffsets],
    to: str | int | datetime,
    *,
    topic: str | None = None,
    partition: int | None = None,
    times: Mapping[TopicPartition, int] | None = None,
) -> list[ResetStep]:
    """Where each selected partition's offset goes; an offset outside [low, high] is refused.

    For a time, `times` holds each partition's offset for it (`offsets_for_times`); an answer
    below the low watermark (retention removed those messages) becomes the low watermark.
    """
    selected = [
        r
        for r in rows
        if (topic is None or r.topic == topic) and (partition is None or r.partition == partition)
    ]
    if not selected:
        where = f"topic {topic}" if topic is not None else "the subscribed topics"
        which = f" partition {partition}" if partition is not None else ""
        raise InvalidRequest(f"no such partition: {where}{which}")
    steps = []
    for r in selected:
        if isinstance(to, datetime):
            if times is None or (r.topic, r.partition) not in times:
                raise InvalidRequest(f"no offset for {to.isoformat()} in {r.topic}/{r.partition}")
            target = min(max(times[(r.topic, r.partition)], r.low), r.high)
        elif to in ("earliest", "latest"):
            target = r.low if to == "earliest" else r.high
        elif isinstance(to, int) and r.low <= to <= r.high:
            target = to
        else:
            raise InvalidRequest(
                f"offset {to} is outside {r.topic}/{r.partition}'s range [{r.low}, {r.high}]"
            )
        steps.append(ResetStep(r.topic, r.partition, r.committed, target))
    return steps


def reset(
    settings: Settings,
    to: ResetTarget,
    *,
    topic: str | None = None,
    partition: int | None = None,
    dry_run: bool,
    admin_factory: AdminFactory = ConfluentKafkaAdmin,
    accept_gap: str | None = None,
    record: Callable[[Sequence[GapAck]], None] | None = None,
    recorded: Mapping[str, str] | None = None,
    accept_lineage: Callable[[Mapping[str, str], str], None] | None = None,
) -> ResetReport:
    """Move the group's offsets to `to`; plan only if dry_run.

    A partition whose committed offset is below the log start (`HistoryGap`) moves only with
    `accept_gap`, the name of who accepts the loss; else `OperationRefused` says how to
    reconcile. Accepted gaps go to `record` (the ``search_offset_gap_ack`` table) before any
    offset moves, and into the moved offsets' commit metadata. A lineage mismatch (a topic
    re-created since the group `recorded` its id, ``search_topic_lineage``; an offset above the
    log end) moves only with `accept_gap` too; a re-created topic moves whole, and its new id goes
    to `accept_lineage` (ids, who) once its offsets moved. Raises `OperationRefused` while
    the group has active members (unless `dry_run`), and `InvalidRequest` for a partition or
    offset that does not exist, or a `PartitionOffset` whose topic is ambiguous.
    """
    group = settings.kafka.group_id
    admin = admin_factory(settings.kafka.client_config())
    topics = subscribed_topics(admin, settings)
    rows = partition_offsets(admin, settings, topics)
    times = None
    if isinstance(to, PartitionOffset):
        if topic is None and len(topics) != 1:
            raise InvalidRequest(
                f"the group reads {len(topics)} topics ({', '.join(topics)}): name one with --topic"
                if topics
                else "none of the subscribed topics exists yet"
            )
        topic, partition = topic or topics[0], to.partition
        described, to = f"{topic}/{to.partition}@{to.offset}", to.offset
    elif isinstance(to, datetime):
        if to.utcoffset() is None:
            raise InvalidRequest(f"{to.isoformat()} has no time zone")
        described = to.astimezone(UTC).isoformat()
        millis = int(to.timestamp() * 1000)
        chosen = [t for t in topics if topic is None or t == topic]
        times = {(t, p): o for t in chosen for p, o in admin.offsets_for_times(t, millis).items()}
    else:
        described = f"offset {to}" if isinstance(to, int) else to
    steps = plan_reset(rows, to, topic=topic, partition=partition, times=times)
    moved = {(s.topic, s.partition) for s in steps}
    gaps = [g for r in rows if (g := r.gap()) is not None and (g.topic, g.partition) in moved]
    ids = admin.topic_ids(topics)
    recorded = recorded or {}
    changed = lineage_changes(recorded, ids)
    mismatches = [m for at, m in lineage_mismatches(rows, recorded, ids).items() if at in moved]
    for t in sorted({m.topic for m in mismatches} & set(changed)):
        if left := [r.partition for r in rows if r.topic == t and (t, r.partition) not in moved]:
            raise InvalidRequest(
                f"topic {t} was re-created: its new lineage is accepted for every partition at "
                f"once, and partitions {left} are not selected: drop --partition"
            )
    if (gaps or mismatches) and accept_gap is None and not dry_run:
        raise OperationRefused(
            "; ".join([*(g.describe() for g in gaps), *(m.describe() for m in mismatches)])
            + f". Moving over lost history needs --accept-gap: first {RECONCILE}, "
            + "then repeat this reset with --accept-gap"
        )
    at, who = datetime.now(UTC), accept_gap or "(not accepted)"
    accepted = [
        GapAck(group, g.topic, g.partition, g.committed, g.log_start, g.missing, who, at)
        for g in gaps
    ]
    members = admin.active_members(group)
    if members and not dry_run:
        raise OperationRefused(
            f"group {group} has {len(members)} active member(s) ({', '.join(members)}): "
            "stop every `searchsync run` of this group, wait for the session to expire, "
            "then reset again"
        )
    if not dry_run:
        if accepted and record is not None:
            record(accepted)
        notes = {
            (a.topic, a.partition): orjson.dumps({"accepted_gap": gap_fields(a)}).decode()
            for a in accepted
        }
        failed = admin.alter_committed(
            group, {(s.topic, s.partition): s.target for s in steps}, notes or None
        )
        if failed:
            raise OperationRefused(
                "; ".join(f"{t}/{p}: {why}" for (t, p), why in sorted(failed.items()))
            )
        for a in accepted:
            log.warning("history gap accepted", extra=gap_fields(a))
        adopted = {m.topic: ids[m.topic] for m in mismatches if m.topic in changed}
        if adopted and accept_lineage is not None:
            accept_lineage(adopted, who)
        for m in mismatches:
            log.warning("lineage mismatch accepted", extra={**asdict(m), "accepted_by": who})
    return ResetReport(group, described, dry_run, members, steps, accepted, mismatches)
