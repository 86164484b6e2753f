"""The repair benchmark's phase 5: a live consumer's commit -> searchable lag, without and with
the repair rotating in a child process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import uuid
from typing import Any, Final

from elasticsearch import NotFoundError
from searchsync.writer import PageWriter

from bench.common import consumer_env, delete_group, init_alias, progress
from bench.live import wait_live
from bench.paced import paced_searchable
from bench.repair_setup import Bench
from bench.repair_wheel import AGGREGATE_TYPE

LIVE_WRITERS: Final = 8


async def live_impact(bench: Bench) -> None:
    o, r = bench.options, bench.report
    u = uuid.uuid4().hex[:8]
    group, live_prefix = f"bench-{u}", f"benchl{u}"
    live_alias = f"{live_prefix}_{AGGREGATE_TYPE}"
    env = consumer_env(group, live_prefix)
    await init_alias(bench.client, live_alias, bench.projector)
    logfile = tempfile.NamedTemporaryFile(  # noqa: SIM115  # closed in finally
        prefix="repair-bench-consumer-", suffix=".log", delete=False
    )
    consumer = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "searchsync", "run", env=env, stdout=logfile, stderr=logfile
    )
    try:
        assert bench.app_pool is not None

        def check() -> None:
            if consumer.returncode is not None:
                raise RuntimeError(f"the consumer exited with {consumer.returncode}")

        writer = PageWriter(bench.app_pool)
        await wait_live(check, bench.client, live_alias, writer, f"benchl-{u}-")
        progress("live consumer is indexing")
        for label, with_repair in (("without", False), ("with", True)):
            r.lag[label] = await _lag(
                bench, live_alias, f"benchl-{u}-{label}-", with_repair, o.lag_rate, o.lag_seconds
            )
            progress(
                f"lag {label} repair: {r.lag[label]['pages']:.0f} pages,"
                f" p50 {r.lag[label]['p50_s']:.3f}s p99 {r.lag[label]['p99_s']:.3f}s"
            )
        r.lag_p99_ratio = r.lag["with"]["p99_s"] / max(r.lag["without"]["p99_s"], 1e-9)
    finally:
        if consumer.returncode is None:
            consumer.terminate()
            try:
                await asyncio.wait_for(consumer.wait(), 60)
            except TimeoutError:
                consumer.kill()
                await consumer.wait()
        logfile.close()
        if consumer.returncode not in (0, -15):
            r.notes.append(f"consumer exited with {consumer.returncode}; log {logfile.name}")
        else:
            os.unlink(logfile.name)
        with contextlib.suppress(NotFoundError):
            await bench.client.indices.delete(index=f"{live_alias}_v1")
        await asyncio.to_thread(_delete_group, bench, group)


def _delete_group(bench: Bench, group: str) -> None:
    bootstrap = bench.settings.kafka.bootstrap_servers
    try:
        delete_group(bootstrap, group, request_timeout=15, timeout=30)
    except Exception as exc:
        bench.report.notes.append(f"could not delete consumer group {group}: {exc!r}")


async def _lag(
    bench: Bench, alias: str, prefix: str, with_repair: bool, rate: float, seconds: float
) -> dict[str, float]:
    repair: Any = None
    rotations: list[float] = []
    if with_repair:
        spec = {
            "index_prefix": bench.settings.elasticsearch.index_prefix,
            "id_prefix": bench.id_prefix,
            "scope": bench.scope,
            "buckets": bench.options.buckets,
            "table": bench.table,
            "sync_hash_column": bench.sync_hash_column,
        }
        repair = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.repair_bench",
            "--rotation-child",
            json.dumps(spec),
            stdout=asyncio.subprocess.PIPE,
        )
        assert repair.stdout is not None
        line = await asyncio.wait_for(repair.stdout.readline(), 60)
        if line.strip() != b"READY":
            raise RuntimeError(f"the repair child did not start: {line!r}")

    async def read_rotations() -> None:
        assert repair is not None and repair.stdout is not None
        async for raw in repair.stdout:
            name, _, value = raw.decode().strip().partition(" ")
            if name == "ROTATION":
                rotations.append(float(value))

    reader = asyncio.create_task(read_rotations()) if repair is not None else None
    spec_w = {
        "prefix": prefix,
        "first": 0,
        "count": max(1, round(rate * seconds)),
        "rate": rate,
        "writers": LIVE_WRITERS,
        "seconds": seconds,
    }
    try:
        run = await paced_searchable(bench.client, alias, spec_w)
    finally:
        if repair is not None:
            if repair.returncode is None:
                repair.terminate()
            await repair.wait()
        if reader is not None:
            await reader
    return {
        **run.summary(),
        "rotations": float(len(rotations)),
        "rotation_s": statistics.mean(rotations) if rotations else 0.0,
    }
