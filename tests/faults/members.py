"""The consumer group of a fault run: 1 to 3 `python -m searchsync run` processes, one group id;
in a relay schedule also the relays, 1 to 3 `python -m searchsync relay run` processes.

Each process logs to a file of its own in the run's log directory (member-<n>.log or
relay-<n>.log, n counting every process of its kind ever started), which the evidence checker
reads afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parents[2]
MAX_MEMBERS = 3


class Member:
    def __init__(
        self,
        number: int,
        env: Mapping[str, str],
        log_path: Path,
        command: tuple[str, ...] = ("run",),
    ) -> None:
        self.number = number
        self.log_path = log_path
        self._log: IO[bytes] = log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "searchsync", *command],
            cwd=REPO,
            env={**os.environ, **env},
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        if self.alive:
            self.proc.send_signal(sig)

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        self._log.close()


class Group:
    """Processes of one kind: ``searchsync <command>`` (``run``), logs ``<name>-<n>.log``."""

    def __init__(
        self,
        env: Mapping[str, str],
        log_dir: Path,
        *,
        command: tuple[str, ...] = ("run",),
        name: str = "member",
    ) -> None:
        self._env = dict(env)
        self._log_dir = log_dir
        self._command = command
        self._name = name
        self.members: list[Member] = []
        self.started = 0
        self.exits: list[tuple[int, int | None, str]] = []  # (member, exit code, how it stopped)

    @property
    def live(self) -> list[Member]:
        return [m for m in self.members if m.alive]

    @property
    def logs(self) -> list[Path]:
        return sorted(self._log_dir.glob(f"{self._name}-*.log"))

    def add(self) -> Member:
        self.started += 1
        log = self._log_dir / f"{self._name}-{self.started}.log"
        m = Member(self.started, self._env, log, self._command)
        self.members.append(m)
        return m

    def pick(self, index: int) -> Member | None:
        live = self.live
        return live[index % len(live)] if live else None

    def kill9(self, index: int) -> Member | None:
        m = self.pick(index)
        if m is not None:
            self.kill9_member(m)
        return m

    def kill9_member(self, m: Member) -> None:
        m.signal(signal.SIGKILL)
        self._reap(m, "kill -9", 30)

    def sigterm(self, index: int, *, deadline_s: float = 60) -> int | None:
        m = self.pick(index)
        if m is None:
            return None
        m.signal(signal.SIGTERM)
        return self._reap(m, "SIGTERM", deadline_s)

    def kill9_mid_revoke(self, index: int, delay_s: float) -> None:
        m = self.pick(index)
        if m is None:
            return
        m.signal(signal.SIGTERM)
        time.sleep(delay_s)
        m.signal(signal.SIGKILL)
        self._reap(m, f"SIGTERM, kill -9 after {delay_s:.3f}s", 30)

    def stop_all(self, *, deadline_s: float = 60) -> list[tuple[Member, int | None]]:
        """SIGTERM every live member and wait: the graceful shutdown commits what finished."""
        live = self.live
        for m in live:
            m.signal(signal.SIGTERM)
        return [(m, self._reap(m, "SIGTERM (stop all)", deadline_s)) for m in live]

    def top_up(self, n: int) -> None:
        """Start members until `n` are alive (at most `MAX_MEMBERS`)."""
        while len(self.live) < min(n, MAX_MEMBERS):
            self.add()

    def close(self) -> None:
        for m in self.live:
            m.signal(signal.SIGKILL)
            self._reap(m, "kill -9 (close)", 30)
        for m in self.members:
            m.close()

    def _reap(self, m: Member, how: str, deadline_s: float) -> int | None:
        code = m.wait(deadline_s)
        if code is None:  # a graceful stop past its deadline: record it, then force it
            m.signal(signal.SIGKILL)
            m.wait(30)
        self.exits.append((m.number, code, how))
        return code
