"""Runs searchsync against the real stack for end-to-end tests.

Each harness has its own consumer group, alias prefix and DLQ topic, so tests never see each
other's documents or dead letters even though they share the outbox topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from elasticsearch import AsyncElasticsearch, ConflictError, NotFoundError
from searchsync.config import Settings, load_settings
from searchsync.mysql.truth import MysqlTruth
from searchsync.observability.metrics import Metrics
from searchsync.ops import offsets
from searchsync.projection import Document, default_registry, registry_from_settings
from searchsync.runtime import run_consumer
from searchsync.search.admin import init_index
from searchsync.search.client import make_es_client

from tests.timing import scaled

REPO = Path(__file__).resolve().parents[2]


REBUILD_ON_SHARED_TABLE: dict[str, str] = {
    # The wiki_page table and the outbox topic are shared with every other test (and hold rows
    # an older projector wrote, which the current one refuses): a rebuild's verification limits
    # are loose for the whole table; each test checks its own documents exactly.
    "SEARCHSYNC_REBUILD_MAX_COUNT_DIFFERENCE": "1000000",
    "SEARCHSYNC_REBUILD_MAX_FAILED_ROWS": "1000000",
    "SEARCHSYNC_REBUILD_MAX_SAMPLE_MISMATCHES": "10",
    "SEARCHSYNC_REBUILD_SAMPLE_SIZE": "100",
    "SEARCHSYNC_REBUILD_POLL_INTERVAL_S": "0.2",
    "SEARCHSYNC_REBUILD_CATCHUP_TIMEOUT_S": "120",
    "SEARCHSYNC_REBUILD_PROGRESS_INTERVAL_S": "1",
}
"""Settings for a rebuild run in an integration test (see the comment above)."""


def harness_env(tag: str, **overrides: str) -> dict[str, str]:
    u = uuid.uuid4().hex[:8]
    env = {
        "SEARCHSYNC_KAFKA_GROUP_ID": f"it-{tag}-{u}",
        "SEARCHSYNC_KAFKA_DLQ_TOPIC": f"it-{tag}-{u}.dlq",
        "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "latest",
        "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": f"it{tag}{u}",
        "SEARCHSYNC_OBSERVABILITY_METRICS_PORT": "0",
        "SEARCHSYNC_PIPELINE_RETRY_BASE_DELAY_S": "0.05",
        "SEARCHSYNC_PIPELINE_RETRY_MAX_DELAY_S": "0.5",
        "SEARCHSYNC_PIPELINE_RETRY_MAX_ATTEMPTS": "4",
        "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S": "10",
        "SEARCHSYNC_PIPELINE_LAG_POLL_INTERVAL_S": "1",
        "SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "6000",
    }
    env.update(overrides)
    return env


async def wait_for(
    check: Callable[[], Awaitable[bool]], deadline_s: float, what: str, interval: float = 0.1
) -> None:
    """Wait until `check()` holds; fail with `what` at the deadline."""
    timeout = scaled(deadline_s)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for: {what}")


class InProcessConsumer:
    """`run_consumer` as a task of the test's event loop."""

    def __init__(self, env: Mapping[str, str]) -> None:
        # the process environment first (SEARCHSYNC_* pointing the tests at another stack, as the
        # fixtures read it), then the test's own settings; `SubprocessConsumer` does the same
        self.settings: Settings = load_settings({**os.environ, **env})
        self.metrics = Metrics()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[int] | None = None

    async def start(self, *, join: bool = False) -> None:
        """Run the consumer until it has partitions. A first member starts its group at the
        topics' end; with `join`, another member joins the running group (a reset would be
        refused while the group has members)."""
        if not join:
            start_group_at_end(self.settings)
        self.task = asyncio.create_task(
            run_consumer(self.settings, stop=self.stop, metrics=self.metrics)
        )
        await wait_for(self._assigned, 60, "partitions assigned to the test consumer")

    async def _assigned(self) -> bool:
        assert self.task is not None
        if self.task.done():
            raise AssertionError(f"consumer exited early with {self.task.result()}")
        text = self.metrics.render().decode()
        for line in text.splitlines():
            if line.startswith("searchsync_partitions_assigned "):
                return float(line.split()[1]) > 0
        return False

    async def close(self) -> int:
        self.stop.set()
        assert self.task is not None
        return await asyncio.wait_for(self.task, 60)

    def metric(self, name: str, **labels: str) -> float:
        """The sum of the samples of `name` whose labels include `labels` (0 when none)."""
        total = 0.0
        for line in self.metrics.render().decode().splitlines():
            if line.startswith("#"):
                continue
            sample, _, value = line.rpartition(" ")
            if sample == name or (sample.startswith(name + "{") and _labels_match(sample, labels)):
                total += float(value)
        return total


def start_group_at_end(settings: Settings) -> dict[int, int]:
    """Start the settings' (new) group at the topic's current end: `searchsync offsets reset
    --to latest`, so the first assignment's timing cannot skip or replay anything."""
    report = offsets.reset(settings, "latest", dry_run=False)
    return {s.partition: s.target for s in report.steps}


def _labels_match(sample: str, labels: Mapping[str, str]) -> bool:
    inner = sample[sample.index("{") + 1 : -1]
    pairs = dict(p.split("=", 1) for p in inner.split(",") if p)
    return all(pairs.get(k) == f'"{v}"' for k, v in labels.items())


class SubprocessConsumer:
    """`python -m searchsync run` in its own process, so a test can kill -9 it."""

    def __init__(self, env: Mapping[str, str], log_path: Path) -> None:
        self.env = {**os.environ, **env}
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "searchsync", "run"],
            cwd=REPO,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._log.close()

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        finally:
            self._log.close()


async def prepare_index(settings: Settings) -> None:
    es = make_es_client(settings)
    try:
        projector = default_registry().get("wiki_page")
        await init_index(
            es,
            settings.alias("wiki_page"),
            projector.mapping,
            schema_version=projector.schema_version,
        )
    finally:
        await es.close()


@contextlib.asynccontextmanager
async def type_indices(settings: Settings, kinds: Sequence[str]) -> AsyncIterator[None]:
    """The index of each of `kinds` (the settings' projectors), as `searchsync index init --type
    <kind>` makes it, for the block; deleted after."""
    registry = registry_from_settings(settings.projection)
    es = make_es_client(settings)
    try:
        for kind in kinds:
            p = registry.get(kind)
            await init_index(es, settings.alias(kind), p.mapping, schema_version=p.schema_version)
        yield
    finally:
        for kind in kinds:
            with contextlib.suppress(NotFoundError):
                await es.indices.delete(index=f"{settings.alias(kind)}_v*")
        await es.close()


async def forget_deletes_after_1s(settings: Settings) -> None:
    """The wiki_page index ``_v1`` of `settings` forgets deleted versions after 1 s
    (``index.gc_deletes``), so stale writes meet only what tombstones keep."""
    es = make_es_client(settings)
    try:
        index = f"{settings.alias('wiki_page')}_v1"
        await es.indices.put_settings(index=index, settings={"index": {"gc_deletes": "1s"}})
    finally:
        await es.close()


async def wait_deleted_versions_forgotten(es: AsyncElasticsearch, alias: str) -> None:
    """Delete a probe document at version 10, then wait until a write at version 1 is accepted:
    only then has Elasticsearch forgotten the versions of documents deleted before it (a
    control: before that, a stale replay proves nothing)."""
    probe = f"gc-probe-{uuid.uuid4().hex[:6]}"
    await es.index(index=alias, id=probe, version=10, version_type="external", document={})
    await es.delete(index=alias, id=probe)

    async def forgotten() -> bool:
        await es.indices.refresh(index=alias)  # deleted versions are pruned on refresh
        try:
            await es.index(index=alias, id=probe, version=1, version_type="external", document={})
        except ConflictError:
            return False
        return True

    await wait_for(forgotten, 120, "Elasticsearch forgot the probe's deleted version", 0.5)


async def drop_indices(settings: Settings) -> None:
    es = make_es_client(settings)
    try:
        with contextlib.suppress(NotFoundError):
            await es.indices.delete(index=f"{settings.alias('wiki_page')}_v1")
    finally:
        await es.close()


async def expected_documents(
    truth: MysqlTruth, ids: list[str], floors: Mapping[str, int]
) -> dict[str, Document]:
    """What every document must be at quiescence: the projection of its row (or a tombstone)."""
    projector = default_registry().get("wiki_page")
    rows = await truth.rows_by_id(projector, ids, primary=True)
    out: dict[str, Document] = {}
    for i in ids:
        if i in rows:
            out[i] = projector.project(rows[i])
        else:
            out[i] = projector.tombstone(i, floors[i])
    return out


async def converged(
    es: AsyncElasticsearch, alias: str, expected: Mapping[str, Document]
) -> tuple[bool, str]:
    """True when every expected document is in the index at its version with its body
    (`Document.matches`: the exact body, or the projected fields of a hard-delete tombstone)."""
    differences = await divergent(es, alias, expected, first_only=True)
    return not differences, differences[0] if differences else ""


async def divergent(
    es: AsyncElasticsearch,
    alias: str,
    expected: Mapping[str, Document],
    *,
    first_only: bool = False,
) -> list[str]:
    """Why each expected document is not in the index as expected (missing, at another version,
    or another body); empty when all are. With `first_only`, stops at the first."""
    resp: Any = await es.mget(index=alias, ids=list(expected))
    out: list[str] = []
    for doc in resp["docs"]:
        want = expected[doc["_id"]]
        if not doc.get("found"):
            out.append(f"{doc['_id']} missing")
        elif doc["_version"] != want.source_revision:
            out.append(f"{doc['_id']} at {doc['_version']} want {want.source_revision}")
        # byte for byte where the truth gives every field (live and soft-deleted documents);
        # a hard-delete tombstone's `tombstoned_at` is its write time: projected fields only
        elif not want.matches(doc["_source"]):
            out.append(f"{doc['_id']} body differs")
        if out and first_only:
            break
    return out


def healthz(port: str) -> tuple[int, dict[str, object]]:
    """A member's ``/healthz`` on `port`: its status code and JSON body (503 included)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, orjson.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read())


def run_unwatched(consumer: InProcessConsumer) -> None:
    """`run_consumer` as a task of the running loop, without waiting for an assignment (a member
    whose partitions may be blocked); `consumer.close()` stops it."""
    consumer.task = asyncio.create_task(
        run_consumer(consumer.settings, stop=consumer.stop, metrics=consumer.metrics)
    )
