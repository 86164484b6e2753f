"""One repair per aggregate type on the real stack: two `repair --daemon` processes, one works and
the other waits as a standby; `repair --once` exits 5 naming the holder; once the worker is killed
(-9: no release), its lease runs out and the standby takes over."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from searchsync.config import load_settings
from searchsync.exit_codes import ExitCode
from searchsync.mysql.pool import close_pool, open_pool

from tests.integration.consumer_harness import REPO, harness_env, prepare_index, wait_for

pytestmark = pytest.mark.integration

TYPE = "wiki_page"
REPAIR = [sys.executable, "-m", "searchsync", "repair", "--dry-run", "--type", TYPE]


@pytest.fixture
def env() -> dict[str, str]:
    return {
        **os.environ,
        **harness_env("lease"),
        "SEARCHSYNC_REPAIR_LEASE_S": "3",
        "SEARCHSYNC_REPAIR_DAEMON_INTERVAL_S": "0.2",
        "SEARCHSYNC_REPAIR_DAEMON_BUCKETS_PER_TICK": "1",
        "SEARCHSYNC_REPAIR_SETTLE_S": "0",
        "SEARCHSYNC_REPAIR_MAX_LIVE_LAG": "0",
    }


class Daemon:
    def __init__(self, env: dict[str, str], out: Path, err: Path) -> None:
        self.out, self.err = out, err
        with out.open("wb") as o, err.open("wb") as e:
            self.proc = subprocess.Popen(
                [*REPAIR, "--daemon"], cwd=REPO, env=env, stdout=o, stderr=e
            )

    @property
    def tag(self) -> str:
        return f"pid {self.proc.pid} ("

    def ticks(self) -> int:
        return self.out.read_text().count("repair rotation")

    def stop(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(60)


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for d in started:
        d.stop(signal.SIGKILL)


async def _lease(env: dict[str, str]) -> tuple[str, bool] | None:
    """The holder of the type's lease, and whether it is still live."""
    pool = await open_pool(load_settings(env).mysql)
    try:
        async with pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute(
                "SELECT holder, expires_at > NOW(6) FROM search_repair_lease"
                " WHERE aggregate_type = %s",
                (TYPE,),
            )
            row = await cur.fetchone()
            await conn.commit()
    finally:
        await close_pool(pool)
    return None if row is None else (str(row[0]), bool(row[1]))


async def test_two_repair_daemons_one_works_the_other_waits_and_takes_over(
    env: dict[str, str], daemons: list[Daemon], tmp_path: Path
) -> None:
    await prepare_index(load_settings(env))
    held = await _lease(env)
    assert held is None or not held[1], f"another repair of {TYPE} holds the lease: {held}"

    first = Daemon(env, tmp_path / "a.out", tmp_path / "a.err")
    daemons.append(first)

    async def first_works() -> bool:
        assert first.proc.poll() is None, first.err.read_text()
        lease = await _lease(env)
        return lease is not None and first.tag in lease[0] and lease[1] and first.ticks() >= 1

    await wait_for(first_works, 60, "the first daemon holds the lease and scans")

    second = Daemon(env, tmp_path / "b.out", tmp_path / "b.err")
    daemons.append(second)

    async def second_waits() -> bool:
        assert second.proc.poll() is None, second.err.read_text()
        return "waiting for it" in second.err.read_text()

    await wait_for(second_waits, 60, "the second daemon waiting for the lease")
    assert first.tag in second.err.read_text()
    assert second.ticks() == 0

    once = await asyncio.to_thread(
        subprocess.run,
        [*REPAIR, "--once"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert once.returncode == ExitCode.BUSY == 5, once.stderr
    assert once.stderr.startswith(f"repair not started: the repair of {TYPE} is held by")
    assert first.tag in once.stderr and once.stdout == ""

    ticks = first.ticks()
    await wait_for(lambda: _ticked(first, ticks), 60, "the first daemon still scanning")
    assert second.ticks() == 0  # never two at once

    first.stop(signal.SIGKILL)  # no release: the standby waits for the lease to run out

    async def second_took_over() -> bool:
        assert second.proc.poll() is None, second.err.read_text()
        lease = await _lease(env)
        return lease is not None and second.tag in lease[0] and second.ticks() >= 1

    await wait_for(second_took_over, 60, "the standby holds the lease and scans")

    second.stop(signal.SIGINT)  # a stopped repair gives its lease back at once
    lease = await _lease(env)
    assert lease is not None and second.tag in lease[0] and not lease[1]


async def _ticked(daemon: Daemon, before: int) -> bool:
    return daemon.ticks() > before
