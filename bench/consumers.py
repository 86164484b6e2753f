"""The consumer as production runs it: ``python -m searchsync run`` processes (default log level
INFO, the production config plus the bench's isolation settings), read through their Prometheus
endpoint.

Each process gets its own free metrics port and a log file; `Members.stop` sends SIGTERM and waits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import IO, Final

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

POLL_S: Final = 0.1  # the finest poll of a window's end
POLL_MAX_S: Final = 0.5  # the longest pause between two polls


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def scrape(port: int) -> dict[str, float]:
    """One GET /metrics: every sample name summed over its label sets (empty on failure)."""
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5, connect=2)) as session,
            session.get(url) as response,
        ):
            body = await response.read()
    except (aiohttp.ClientError, OSError, TimeoutError):
        return {}
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode("utf-8", "replace")):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + float(sample.value)
    return totals


@dataclass
class Member:
    process: asyncio.subprocess.Process
    port: int
    log: IO[bytes]
    last: dict[str, float] = field(default_factory=dict)


class Members:
    """N consumer processes in one group."""

    def __init__(
        self, env: Mapping[str, str], n: int, *, label: str, python: str | None = None
    ) -> None:
        """`python`: the members' interpreter (another checkout's consumer; default this one,
        or `BENCH_CONSUMER_PYTHON`, a development aid)."""
        self._env = dict(env)
        self._python = python or os.environ.get("BENCH_CONSUMER_PYTHON", sys.executable)
        self._n = n
        self._label = label
        self.members: list[Member] = []
        self.notes: list[str] = []
        # development aid: BENCH_PYSPY=DIR attaches `py-spy record` to each member
        self._profile_dir = os.environ.get("BENCH_PYSPY")
        self._profilers: list[asyncio.subprocess.Process] = []

    @property
    def pids(self) -> list[int]:
        return [m.process.pid for m in self.members]

    async def start(self) -> None:
        for i in range(self._n):
            port = free_port()
            env = dict(self._env)
            env["SEARCHSYNC_OBSERVABILITY_METRICS_PORT"] = str(port)
            log = tempfile.NamedTemporaryFile(  # noqa: SIM115  # closed in stop()
                prefix=f"pipeline-bench-{self._label}-{i}-", suffix=".log", delete=False
            )
            argv = [self._python, "-m", "searchsync", "run"]
            cprofile = os.environ.get("BENCH_CPROFILE")  # development aid, like PYSPY
            if cprofile:
                out = os.path.join(cprofile, f"{self._label}-{i}.prof")
                argv[1:1] = ["-m", "cProfile", "-o", out]
            process = await asyncio.create_subprocess_exec(*argv, env=env, stdout=log, stderr=log)
            self.members.append(Member(process, port, log))
            if self._profile_dir:
                out = os.path.join(self._profile_dir, f"{self._label}-{i}-{process.pid}.txt")
                self._profilers.append(
                    await asyncio.create_subprocess_exec(
                        os.path.join(os.path.dirname(sys.executable), "py-spy"),
                        "record",
                        "-p",
                        str(process.pid),
                        "-r",
                        os.environ.get("BENCH_PYSPY_RATE", "250"),
                        "--format",
                        "raw",
                        "-o",
                        out,
                        stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL,
                    )
                )

    def check_alive(self) -> None:
        for m in self.members:
            if m.process.returncode is not None:
                raise RuntimeError(
                    f"a consumer exited early with {m.process.returncode}; log {m.log.name}"
                )

    async def totals(self) -> dict[str, float]:
        """The sum over the members of each metric (a member that does not answer keeps its
        last scrape)."""
        self.check_alive()
        scraped = await asyncio.gather(*(scrape(m.port) for m in self.members))
        out: dict[str, float] = {}
        for member, got in zip(self.members, scraped, strict=True):
            if got:
                member.last = got
            for name, value in member.last.items():
                out[name] = out.get(name, 0.0) + value
        return out

    async def until_total(
        self, name: str, span: tuple[float, float], started: float, what: str
    ) -> dict[str, float]:
        """Poll until the members' `name` goes from `span`'s first value (at `started`,
        monotonic) to its second; the last totals (TimeoutError after 300 s).

        A scrape costs a member about 1.1 ms of CPU rendering its metrics, plus the HTTP
        exchange, and production scrapes every 15 s or so: a poll every 100 ms throughout added
        10-15 ms of CPU per second to the consumer's figure. So the pause is half the time the
        rate so far says is left, within [`POLL_S`, `POLL_MAX_S`]: a few scrapes per window, and
        the end still found within `POLL_S` of it while the rate holds."""
        base, target = span
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            totals = await self.totals()
            value = totals.get(name, 0.0)
            if value >= target:
                return totals
            rate = (value - base) / max(1e-3, time.monotonic() - started)
            left = (target - value) / rate if rate > 0 else 0.0
            await asyncio.sleep(min(POLL_MAX_S, max(POLL_S, 0.5 * left)))
        raise TimeoutError(f"timed out after 300 s waiting for: {what}")

    async def all_assigned(self) -> bool:
        """Every member holds at least one partition."""
        await self.totals()
        return all(m.last.get("searchsync_partitions_assigned", 0) > 0 for m in self.members)

    async def stop(self, *, keep_logs: bool = False) -> None:
        for profiler in self._profilers:
            profiler.send_signal(signal.SIGINT)
            await profiler.wait()
        self._profilers = []
        for m in self.members:
            if m.process.returncode is None:
                m.process.terminate()
        for m in self.members:
            try:
                await asyncio.wait_for(m.process.wait(), 60)
            except TimeoutError:
                m.process.kill()
                await m.process.wait()
            m.log.close()
            if m.process.returncode not in (0, -15) or keep_logs:
                self.notes.append(f"consumer exited with {m.process.returncode}; log {m.log.name}")
            else:
                os.unlink(m.log.name)
        self.members = []
