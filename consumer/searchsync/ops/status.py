"""`searchsync status`: a report of sections, each gathered by one probe. A section carries
problems (unhealthy: the index is not kept up, or may be wrong) and warnings (worth a look); a
probe that cannot look makes only its own section unhealthy."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Section:
    """One part of the report: what was found, and what is wrong with it."""

    name: str
    data: Mapping[str, Any]
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    service: str | None = None  # the service that did not answer, when that is all it found

    @property
    def healthy(self) -> bool:
        return not self.problems


Probe = Callable[[], Awaitable[Section | None]]
"""Gathers one section (None: nothing to report); raising makes the section unhealthy."""


@dataclass(frozen=True, slots=True)
class StatusReport:
    """Every section, in the order the probes were given."""

    sections: tuple[Section, ...]
    taken_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def healthy(self) -> bool:
        return all(s.healthy for s in self.sections)

    @property
    def problems(self) -> list[str]:
        """Each problem, prefixed by its section; a service that did not answer is one line
        naming every section that asked it."""
        lines: list[str] = []
        away: dict[str, tuple[list[str], int]] = {}  # service -> (sections, its line)
        for s in self.sections:
            if s.service is None:
                lines += [f"{s.name}: {p}" for p in s.problems]
            elif s.service in away:
                away[s.service][0].append(s.name)
            else:
                away[s.service] = ([s.name], len(lines))
                lines.append(s.problems[0])
        for names, at in away.values():
            lines[at] = f"{', '.join(names)}: {lines[at]}"
        return lines

    @property
    def warnings(self) -> list[str]:
        return [f"{s.name}: {w}" for s in self.sections for w in s.warnings]

    def as_json(self) -> dict[str, Any]:
        return {
            "healthy": self.healthy,
            "taken_at": self.taken_at.isoformat(),
            "problems": self.problems,
            "warnings": self.warnings,
            "sections": {
                s.name: {
                    "healthy": s.healthy,
                    "problems": list(s.problems),
                    "warnings": list(s.warnings),
                    **s.data,
                }
                for s in self.sections
            },
        }


async def gather(
    probes: Sequence[tuple[str, Probe]],
    *,
    timeout_s: float = 15.0,
    asks: Mapping[str, str] | None = None,
    explain: Callable[[BaseException], str | None] | None = None,
) -> StatusReport:
    """Run every probe concurrently, each within `timeout_s`; a failing probe is a problem.

    `asks` names, per probe, the service it asks, said when it does not answer in time;
    `explain` may turn a probe's exception into a message.
    """

    async def one(name: str, probe: Probe) -> Section | None:
        source = (asks or {}).get(name)
        try:
            return await asyncio.wait_for(probe(), timeout_s)
        except TimeoutError:
            where = "" if source is None else f" from {source}"
            problem = f"could not check: no answer within {timeout_s:g} s{where}"
            return Section(name, {}, (problem,), service=source)
        except Exception as exc:  # a probe's failure is that section's finding, not a crash
            explained = explain(exc) if explain is not None else None
            text = explained or str(exc) or type(exc).__name__
            service = source if explained is not None else None
            return Section(name, {}, (f"could not check: {text}",), service=service)

    sections = await asyncio.gather(*(one(name, probe) for name, probe in probes))
    return StatusReport(tuple(s for s in sections if s is not None))


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a daemon thread of its own: a probe given up at its timeout leaves it
    behind, and the process still ends on time (the loop's executor would be waited for)."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if not done.set_running_or_notify_cancel():
            return  # given up before it started
        try:
            done.set_result(fn(*args))
        except BaseException as exc:  # handed to the awaiting probe
            done.set_exception(exc)

    threading.Thread(target=run, name="searchsync-status-probe", daemon=True).start()
    return await asyncio.wrap_future(done)
