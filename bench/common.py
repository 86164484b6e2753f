"""Helpers every benchmark shares: its main, waiting on a condition, quantiles, the page body,
bounded concurrency, progress lines, the report header (time, host), the bench's isolated
settings, the application user's pool, the alias, deleting a consumer group and a realtime
"which ids are missing".
"""

from __future__ import annotations

import asyncio
import gc
import logging
import math
import os
import platform
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import aiomysql
from confluent_kafka.admin import AdminClient
from elasticsearch import AsyncElasticsearch
from searchsync.config import MysqlSettings
from searchsync.gc_tuning import tune_for_throughput
from searchsync.kafka.admin import ConfluentKafkaAdmin
from searchsync.mysql.pool import create_pool
from searchsync.observability.metrics import Metrics
from searchsync.projection import Projector
from searchsync.search.admin import init_index

MGET_CHUNK: Final = 1_000
PYTHON_GC_ENV: Final = "BENCH_PYTHON_GC"
"""Set (to anything) to keep Python's default GC thresholds in a bench process (a side-by-side
run: `searchsync.gc_tuning`)."""

Options = TypeVar("Options")
Result = TypeVar("Result")


def bench_main(
    module: str,
    argv: Sequence[str] | None,
    parse: Callable[[Sequence[str]], Options],
    child: Callable[[Options], Coroutine[Any, Any, None] | None],
    run: Callable[[Options, str], Coroutine[Any, Any, Result]],
    emit: Callable[[Options, Result], str],
) -> int:
    """A benchmark's ``main``: parse `argv` (default: the process's), log warnings to stderr; run
    the child process's job when `child` gives one; else `run` the bench with its command line
    and print what `emit` makes of the report (the text or one JSON object)."""
    args = list(sys.argv[1:] if argv is None else argv)
    options = parse(args)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    if not os.environ.get(PYTHON_GC_ENV):
        tune_for_throughput()  # as `searchsync run`, `rebuild` and `repair` do
    job = child(options)
    if job is not None:
        asyncio.run(job)
        return 0
    command = " ".join([f".venv/bin/python -m {module}", *args])
    report = asyncio.run(run(options, command))
    print(emit(options, report))
    return 0


async def wait_for(
    check: Callable[[], Awaitable[bool]], deadline_s: float, what: str, interval: float = 0.05
) -> None:
    """Wait until `check()` holds; raise TimeoutError naming `what` at the deadline."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(interval)
    raise TimeoutError(f"timed out after {deadline_s}s waiting for: {what}")


def topic_ends(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    """The current high watermark of each partition (once each has a leader)."""
    marks = ConfluentKafkaAdmin({"bootstrap.servers": bootstrap}).watermarks(topic)
    return {p: marks[p].high for p in partitions}


def metric_total(metrics: Metrics, name: str) -> float:
    """The sum of every sample called `name` (all label sets), 0 when absent."""
    total = 0.0
    for family in metrics.registry.collect():
        for sample in family.samples:
            if sample.name == name:
                total += float(sample.value)
    return total


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def median_spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max) of the finite values; NaNs for none."""
    finite = sorted(v for v in values if math.isfinite(v))
    if not finite:
        return math.nan, math.nan, math.nan
    mid = len(finite) // 2
    med = finite[mid] if len(finite) % 2 else (finite[mid - 1] + finite[mid]) / 2
    return med, finite[0], finite[-1]


def page_body(page_id: str) -> tuple[str, str, dict[str, list[dict[str, str]]]]:
    """A page of realistic size (~1 KiB of mixed Chinese/ASCII text, two relations)."""
    index = sum(page_id.encode())
    title = f"基准页面 {index} {page_id}"
    content = ("吕布 貂蝉 董卓 王允 连环计 " * 20) + f" page {index}"
    relations = {
        "RELATED_CHARACTER": [
            {"entity_id": f"c{index % 17}", "entity_type": "character", "title": "主角"}
        ],
        "RELATED_PLACE": [{"entity_id": f"p{index % 5}", "entity_type": "place", "title": "长安"}],
    }
    return title, content, relations


async def run_bounded(concurrency: int, jobs: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Run `jobs` with at most `concurrency` in flight; the first error wins."""
    it = iter(jobs)

    async def worker() -> None:
        for job in it:
            await job()

    async with asyncio.TaskGroup() as group:
        for _ in range(concurrency):
            group.create_task(worker())


def item_errors(response: Any) -> int:
    """The items of a bulk response (``filter_path="items.*.status"`` at least) that failed."""
    return sum(1 for item in response["items"] if next(iter(item.values()))["status"] >= 300)


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def started_at() -> str:
    """Now, as a report's first line gives it (UTC, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def host_line() -> str:
    """The machine a report was taken on: name, CPUs, Python, and the GC thresholds in effect."""
    gc_line = "/".join(str(t) for t in gc.get_threshold())
    return (
        f"{platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()},"
        f" gc thresholds {gc_line})"
    )


def app_user() -> tuple[str, str]:
    """The application's MySQL user and password (what writes pages), from the environment."""
    return (
        os.environ.get("APP_DB_USER", "searchsync_app"),
        os.environ.get("APP_DB_PASSWORD", "searchsync_app"),
    )


async def open_app_pool(mysql: MysqlSettings, *, minsize: int, maxsize: int) -> aiomysql.Pool:
    """A pool of the application's user (`app_user`) on `mysql`'s server and database."""
    user, password = app_user()
    return await create_pool(
        host=mysql.host,
        port=mysql.port,
        user=user,
        password=password,
        database=mysql.database,
        minsize=minsize,
        maxsize=maxsize,
    )


async def init_alias(es: AsyncElasticsearch, alias: str, projector: Projector) -> None:
    """`alias` and its first index, with `projector`'s mapping and schema version."""
    await init_index(es, alias, projector.mapping, schema_version=projector.schema_version)


def delete_group(
    bootstrap: str, group: str, *, request_timeout: float | None = None, timeout: float = 10
) -> None:
    """Delete consumer group `group`, waiting `timeout` s for the answer (raises its error)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    options: dict[str, Any] = {}
    if request_timeout is not None:
        options["request_timeout"] = request_timeout
    for future in admin.delete_consumer_groups([group], **options).values():
        future.result(timeout=timeout)


def consumer_env(group: str, index_prefix: str) -> dict[str, str]:
    """The process environment plus what isolates a consumer: its group (and DLQ topic), starting
    at the topic end, its index prefix, a free metrics port, a short session and shutdown."""
    env = dict(os.environ)
    env.update(
        {
            "SEARCHSYNC_KAFKA_GROUP_ID": group,
            "SEARCHSYNC_KAFKA_DLQ_TOPIC": f"{group}.dlq",
            "SEARCHSYNC_KAFKA_AUTO_OFFSET_RESET": "latest",
            "SEARCHSYNC_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "SEARCHSYNC_ELASTICSEARCH_INDEX_PREFIX": index_prefix,
            "SEARCHSYNC_OBSERVABILITY_METRICS_PORT": "0",
            "SEARCHSYNC_PIPELINE_SHUTDOWN_DEADLINE_S": "10",
        }
    )
    return env


def bench_env(overrides: dict[str, str]) -> dict[str, str]:
    """`consumer_env` with the bench's own group and prefix, a 5 s lag poll, then `overrides`."""
    u = uuid.uuid4().hex[:8]
    env = consumer_env(f"bench-{u}", f"bench{u}")
    env["SEARCHSYNC_PIPELINE_LAG_POLL_INTERVAL_S"] = "5"
    env.update(overrides)
    return env


async def missing(
    client: AsyncElasticsearch, alias: str, ids: Sequence[str], *, version: int
) -> list[str]:
    """The ids not yet in `alias` at `version` or later (realtime mget, in chunks)."""
    left: list[str] = []
    for start in range(0, len(ids), MGET_CHUNK):
        chunk = list(ids[start : start + MGET_CHUNK])
        resp: Any = await client.mget(index=alias, ids=chunk, source=False)
        for doc in resp["docs"]:
            if not doc.get("found") or int(doc["_version"]) < version:
                left.append(doc["_id"])
    return left
