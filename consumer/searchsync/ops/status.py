"""`searchsync status`: a report of sections, each gathered by one probe. A section carries
problems (unhealthy: the index is not kept up, or may be wrong) and warnings (worth a look); a
probe that cannot look makes only its own section unhealthy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Section:
    """One part of the report: what was found, and what is wrong with it."""

    name: str
    data: Mapping[str, Any]
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

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
        return [f"{s.name}: {p}" for s in self.sections for p in s.problems]

    @property
    def warnings(self) -> list[str]:
        return [f"{s.name}: {w}" for s in self.sections for w in s.warnings]

    def as_json(self) -> dict[str, Any]:
        sections = {
            s.name: {
                "healthy": s.healthy,
                "problems": list(s.problems),
                "warnings": list(s.warnings),
                **dict(s.data),
            }
            for s in self.sections
        }
        return {
            "healthy": self.healthy,
            "taken_at": self.taken_at.isoformat(),
            "problems": self.problems,
            "warnings": self.warnings,
            "sections": sections,
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
        started = time.monotonic()
        try:
            return await asyncio.wait_for(probe(), timeout_s)
        except TimeoutError:
            source = (asks or {}).get(name)
            where = "" if source is None else f" from {source}"
            waited = time.monotonic() - started
            return Section(name, {}, (f"could not check: no answer within {waited:.0f} s{where}",))
        except Exception as exc:  # a probe's failure is that section's finding, not a crash
            text = (explain(exc) if explain is not None else None) or str(exc)
            return Section(name, {}, (f"could not check: {text or type(exc).__name__}",))

    sections = await asyncio.gather(*(one(name, probe) for name, probe in probes))
    return StatusReport(tuple(s for s in sections if s is not None))
