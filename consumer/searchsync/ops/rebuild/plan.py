"""What `searchsync rebuild` is asked to do; what it decides before it changes anything (the type's
topics and watermark, the new index, its body and ``_meta``, the catch-up group); its outcome."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from searchsync import naming
from searchsync.config import Settings
from searchsync.errors import InvalidRequest, OperationRefused
from searchsync.kafka.admin import KafkaAdmin
from searchsync.mysql.truth import Truth
from searchsync.ops.rebuild.records import RebuildRecord, Watermark, record_summary, watermark_keys
from searchsync.ops.rebuild.verify import VerifyReport
from searchsync.projection import Projector
from searchsync.projection.topics import consumed_topics, subscription
from searchsync.search.port import SCHEMA_VERSION_META, IndexAdmin, IndexInfo, WriteIndex
from searchsync.types import TopicPartition

BULK_LOAD: Mapping[str, Any] = {"refresh_interval": "-1", "number_of_replicas": 0}
"""The new index's settings while the backfill fills it."""
_TIMES = ("started_at", "updated_at", "finished_at")


@dataclass(frozen=True, slots=True)
class Plan:
    """What a rebuild is about to do (`--dry-run` prints it)."""

    aggregate_type: str
    alias: str
    current_index: str
    new_index: str
    catchup_group: str
    topics: tuple[str, ...]
    watermark: Watermark
    rows: int
    old_schema_version: int | None
    new_schema_version: int
    current_docs: int | None = None  # documents in the current index (None: not listed)

    def summary(self) -> dict[str, Any]:
        watermark = watermark_keys(self.watermark)
        return {**dataclasses.asdict(self), "topics": list(self.topics), "watermark": watermark}


@dataclass(frozen=True, slots=True)
class RebuildOptions:
    aggregate_type: str
    resume: bool = False
    abandon: bool = False
    dry_run: bool = False
    wait_for_live: bool = True
    stop_after_chunks: int | None = None  # drills and tests: stop as if killed after K chunks

    def check(self, alias: str, existing: RebuildRecord | None) -> None:
        """Refuse to start a second rebuild of `alias`, or to resume none."""
        if existing is not None and not self.resume:
            raise OperationRefused(
                f"alias {alias} has an unfinished rebuild {existing.rebuild_id} "
                f"({existing.status.value}, into {existing.target_index}): pass --resume to "
                "continue it, or --abandon to give it up"
            )
        if existing is None and self.resume:
            raise InvalidRequest(
                f"no unfinished rebuild of {alias} to resume: run without --resume"
            )


@dataclass(slots=True)
class RebuildOutcome:
    ok: bool
    action: str  # planned, done, refused, interrupted, abandoned, waiting
    message: str
    record: RebuildRecord | None = None
    plan: Plan | None = None
    verify: VerifyReport | None = None
    failures: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "action": self.action,
            "message": self.message,
            "plan": None if self.plan is None else self.plan.summary(),
            "rebuild": None if self.record is None else record_summary(self.record, *_TIMES),
            "verify": None if self.verify is None else self.verify.summary(),
            "failures": [{"id": i, "why": w} for i, w in self.failures],
        }


async def make_plan(
    settings: Settings,
    kafka: KafkaAdmin,
    index_admin: IndexAdmin,
    truth: Truth,
    projector: Projector,
    alias: str,
) -> Plan:
    """The plan of a rebuild of `alias` now (the watermark is taken here)."""
    writer = await write_index(index_admin, projector, alias)
    topics = await asyncio.to_thread(type_topics, kafka, settings, projector.aggregate_type)
    watermark = await asyncio.to_thread(high_watermarks, kafka, topics)
    indices = await index_admin.list_indices(alias)
    name = naming.next_physical_name(alias, [i.name for i in indices])
    return Plan(
        aggregate_type=projector.aggregate_type,
        alias=alias,
        current_index=writer.index,
        new_index=name,
        catchup_group=f"{settings.kafka.group_id}.rebuild.v{naming.physical_version(alias, name)}",
        topics=topics,
        watermark=watermark,
        rows=await truth.count(projector),
        old_schema_version=writer.schema_version,
        new_schema_version=projector.schema_version,
        current_docs=next((i.docs for i in indices if i.name == writer.index), None),
    )


async def write_index(
    index_admin: IndexAdmin, projector: Projector, alias: str, *, loading: bool = False
) -> WriteIndex:
    """The write index of `alias`; `OperationRefused` without one, or, `loading` (a load writes
    as `projector` projects), when it was built for another projection schema."""
    writer = await index_admin.write_index(alias)
    if writer is None:
        raise OperationRefused(
            f"alias {alias} has no write index: run `searchsync index init --type "
            f"{projector.aggregate_type}` first" + (" (`--load` loads it right after)" * loading)
        )
    if loading and writer.schema_version not in (None, projector.schema_version):
        raise OperationRefused(
            f"alias {alias} writes to {writer.index}, built for projection schema "
            f"{writer.schema_version}, and this projector is schema "
            f"{projector.schema_version}: load with the projector the index was built for, "
            "or rebuild the index first (`searchsync rebuild`)"
        )
    return writer


def first_record(plan: Plan, rebuild_id: str, now: datetime) -> RebuildRecord:
    return RebuildRecord(
        rebuild_id=rebuild_id,
        aggregate_type=plan.aggregate_type,
        alias=plan.alias,
        source_index=plan.current_index,
        target_index=plan.new_index,
        schema_version=plan.new_schema_version,
        catchup_group=plan.catchup_group,
        watermark=dict(plan.watermark),
        started_at=now,
        updated_at=now,
    )


def unloaded(plan: Plan, table: str, settings: Settings) -> str | None:
    """Why the rebuild must not start (None: it may): the current index lacks more rows than the
    verification tolerates (``max_count_difference``, and a ``max_query_diff_rate`` share); it
    was never loaded, or only partly, and comparing search answers with it would refuse the swap."""
    docs, rows, limits = plan.current_docs, plan.rows, settings.rebuild
    if docs is None or rows - docs <= limits.max_count_difference:
        return None
    if docs >= rows * (1 - limits.max_query_diff_rate):
        return None
    return (
        f"{plan.current_index} holds {docs} documents for {rows} rows of {table}: it was never "
        f"loaded, or only partly. Run `searchsync index load --type {plan.aggregate_type}` "
        "first (the rebuild verifies its new index against the current one's search answers)"
    )


def type_topics(
    admin: KafkaAdmin, settings: Settings, aggregate_type: str, *, must_exist: bool = True
) -> tuple[str, ...]:
    """The outbox topic of `aggregate_type` (``rebuild.topic_template``), which must be one the
    consumer group subscribes to and (with `must_exist`) exist; `OperationRefused` otherwise.
    Without `must_exist`, a topic that does not exist yet is left out."""
    topic = settings.rebuild.topic_template.replace("{type}", aggregate_type)
    kafka = settings.kafka
    subscribed = (
        re.match(kafka.topic_regex, topic) is not None
        if kafka.topic_regex is not None
        else topic in consumed_topics(settings, [aggregate_type])
    )
    if not subscribed:
        raise OperationRefused(
            f"topic {topic} (rebuild.topic_template) is not in the consumer's subscription "
            f"({subscription(settings, [aggregate_type])}): set rebuild.topic_template to the"
            " type's outbox topic"
        )
    if not admin.topic_exists(topic):
        if not must_exist:
            return ()
        raise OperationRefused(
            f"topic {topic} does not exist yet: write one {aggregate_type} change (or create "
            "the topic) so that its watermark can be taken, then run the rebuild again"
        )
    return (topic,)


def _flat_settings(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """The mapping's index settings, ``settings.index.*`` moved to the top level."""
    own = dict(mapping.get("settings", {}))
    own.update(own.pop("index", {}) if isinstance(own.get("index"), Mapping) else {})
    return own


def index_body(mapping: Mapping[str, Any]) -> dict[str, Any]:
    return {**mapping, "settings": {**_flat_settings(mapping), **BULK_LOAD}}


def restored_settings(mapping: Mapping[str, Any], previous: IndexInfo | None) -> tuple[str, int]:
    """``(refresh_interval, replicas)`` after the backfill: the mapping's values, else the
    previous index's, else Elasticsearch's defaults."""
    own = _flat_settings(mapping)
    refresh = own.get("refresh_interval", previous.refresh_interval if previous else "1s")
    replicas = own.get("number_of_replicas", previous.replicas if previous else 1)
    return str(refresh), int(replicas)


def rebuild_meta(
    schema_version: int, rebuild_id: str, watermark: Watermark, source_index: str
) -> dict[str, Any]:
    return {
        SCHEMA_VERSION_META: schema_version,
        "created_by_rebuild": True,
        "rebuild_id": rebuild_id,
        "rebuilt_from": source_index,
        "watermark": watermark_keys(watermark),
    }


async def create_index(index_admin: IndexAdmin, projector: Projector, r: RebuildRecord) -> None:
    meta = rebuild_meta(projector.schema_version, r.rebuild_id, r.watermark, r.source_index)
    await index_admin.create_index(r.target_index, index_body(projector.mapping), meta=meta)


def catchup_settings(settings: Settings, group: str, topics: Sequence[str]) -> Settings:
    """The live settings with the catch-up group's id and subscription (the type's topics)."""
    kafka = dataclasses.replace(
        settings.kafka,
        group_id=group,
        topics=tuple(topics),
        topic_regex=None,
        auto_offset_reset="earliest",  # a partition created after the watermark: all of it
    )
    observability = dataclasses.replace(settings.observability, metrics_port=0)
    return dataclasses.replace(settings, kafka=kafka, observability=observability)


def below_log_start(admin: KafkaAdmin, watermark: Watermark) -> list[str]:
    """Each partition whose watermark lies below its log start now, as text: the events from the
    watermark to the log start were deleted (retention)."""
    return [
        f"{topic}[{partition}] watermark {offset} < log start {marks.low}"
        for topic in sorted({t for t, _ in watermark})
        for partition, marks in admin.watermarks(topic).items()
        if (offset := watermark.get((topic, partition))) is not None and offset < marks.low
    ]


def high_watermarks(admin: KafkaAdmin, topics: Sequence[str]) -> dict[TopicPartition, int]:
    return {
        (topic, partition): marks.high
        for topic in topics
        for partition, marks in admin.watermarks(topic).items()
    }
