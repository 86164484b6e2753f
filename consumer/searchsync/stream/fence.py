"""The schema fence (docs/design.md, invariant 11): per write target, the index's
``_meta.projection_schema_version`` must equal the projector's (none, or no index, does not fence).
Checked at first use, every `interval_s` and after a failed write; a target never checked is held.
Fenced works get SCHEMA_FENCED (SYSTEMIC): nothing written or dead-lettered."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from searchsync.errors import ErrorCode, IndexAdminError, TransientError
from searchsync.naming import parse_physical_name
from searchsync.observability.metrics import Metrics
from searchsync.projection import Projector
from searchsync.search.port import IndexAdmin, schema_version_of
from searchsync.search.sink import OutcomeKind
from searchsync.stream.work import Work

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TargetState:
    """What the last check of one write target found."""

    target: str  # an alias, or a physical index name
    own_version: int  # the projector's schema_version
    index: str | None  # the physical index its writes go to (None: no such index or alias)
    index_version: int | None  # that index's _meta.projection_schema_version (None: not set)

    @property
    def fenced(self) -> bool:
        return self.index_version is not None and self.index_version != self.own_version

    def reason(self) -> str:
        return (
            f"schema fenced: {self.target} writes to {self.index}, built for "
            f"projection_schema_version {self.index_version}, but this consumer projects "
            f"version {self.own_version}; writes are paused until they agree (deploy the "
            f"release that projects {self.index_version}, or roll the alias back with "
            "`searchsync index rollback`)"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "index": self.index,
            "index_version": self.index_version,
            "own_version": self.own_version,
            "fenced": self.fenced,
        }


@dataclass(slots=True)
class _TargetCheck:
    state: TargetState | None  # None: never checked successfully
    own_version: int
    checked_at: float | None  # clock reading of the last successful check
    check_number: int = 0  # which check answered last (`SchemaFence.mark`)
    error: str | None = None  # why the last check failed (None: it answered)


class SchemaFence:
    """Cached `TargetState` per write target, re-checked on a timer and after write errors."""

    def __init__(
        self,
        admin: IndexAdmin,
        *,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        observer: Metrics | None = None,
    ) -> None:
        self._admin = admin
        self._interval_s = interval_s
        self._clock = clock
        self._observer = observer
        self._entries: dict[str, _TargetCheck] = {}
        self._lock = asyncio.Lock()
        self._checks = 0  # checks started so far

    def state(self, target: str) -> TargetState | None:
        entry = self._entries.get(target)
        return None if entry is None else entry.state

    def fenced(self, target: str) -> TargetState | None:
        """The target's state when fenced; None when its writes may go ahead."""
        state = self.state(target)
        return state if state is not None and state.fenced else None

    def holding(self) -> bool:
        """Some target is fenced, or never checked successfully."""
        return any(e.state is None or e.state.fenced for e in self._entries.values())

    def states(self) -> list[TargetState]:
        return [e.state for _, e in sorted(self._entries.items()) if e.state is not None]

    def unchecked(self, target: str) -> str | None:
        """Why `target` was never checked successfully (None: it was, or unknown)."""
        entry = self._entries.get(target)
        if entry is None or entry.state is not None:
            return None
        return entry.error or "not checked yet"

    def reasons(self) -> list[str]:
        """One line per fenced target and per target never checked."""
        out = [s.reason() for s in self.states() if s.fenced]
        for target in sorted(self._entries):
            error = self.unchecked(target)
            if error is not None:
                out.append(f"schema fence of {target} not checked yet ({error}); writes wait")
        return out

    def mark(self) -> int:
        """A mark for `recheck`'s `since`: later checks have higher numbers."""
        return self._checks

    def due(self) -> bool:
        now = self._clock()
        return any(self._is_due(e, now) for e in self._entries.values())

    async def check(self, target: str, own_version: int) -> TargetState | None:
        """The state of `target` for a projector of `own_version`, checked now if never or due."""
        entry = self._entries.get(target)
        if entry is None or entry.own_version != own_version:
            self._entries[target] = _TargetCheck(None, own_version, None)
        await self._refresh(self._is_due, only=target)
        return self.state(target)

    async def recheck(self, target: str, *, since: int) -> TargetState | None:
        """Check `target` again unless a check started after `since` answered."""
        await self._refresh(lambda entry, _now: entry.check_number <= since, only=target)
        return self.state(target)

    async def refresh_if_due(self) -> None:
        await self._refresh(self._is_due)

    async def hold(self, target: str, projector: Projector, works: Sequence[Work]) -> bool:
        """End `works` SCHEMA_FENCED when `target` is fenced or unchecked (True); False: write
        them."""
        state = await self.check(target, projector.schema_version)
        if state is None:  # never checked successfully: nothing is written unchecked
            message = f"the schema fence of {target} cannot be checked: {self.unchecked(target)}"
        elif state.fenced:
            message = state.reason()
        else:
            return False
        for work in works:
            work.plan(target, projector.schema_version)
            work.end(OutcomeKind.FAILED, ErrorCode.SCHEMA_FENCED, message)
        return True

    async def after_write(self, works: Sequence[Work], *, since: int) -> None:
        """Turn the failed writes of a target fenced meanwhile SCHEMA_FENCED; `since` is a `mark`
        taken before the writes."""
        failed = sorted({w.alias for w in works if not w.finished and w.alias is not None})
        fenced: dict[str, TargetState] = {}
        for target in failed:
            state = await self.recheck(target, since=since)
            if state is not None and state.fenced:
                fenced[target] = state
        for w in works if fenced else ():
            held = None if w.finished or w.alias is None else fenced.get(w.alias)
            if held is not None:
                w.end(OutcomeKind.FAILED, ErrorCode.SCHEMA_FENCED, held.reason())

    def _is_due(self, entry: _TargetCheck, now: float) -> bool:
        return entry.checked_at is None or now - entry.checked_at >= self._interval_s

    async def _refresh(
        self, wanted: Callable[[_TargetCheck, float], bool], only: str | None = None
    ) -> None:
        async with self._lock:  # one check at a time; whoever waited sees its answer
            now = self._clock()
            targets = [only] if only is not None else sorted(self._entries)
            for target in targets:
                entry = self._entries.get(target)
                if entry is None or not wanted(entry, now):
                    continue
                self._checks += 1
                number = self._checks
                try:
                    index, meta = await self._read(target)
                except Exception as exc:  # the cluster's failure is the writes' failure too
                    entry.error = f"{type(exc).__name__}: {exc}"
                    expected = isinstance(exc, TransientError | IndexAdminError)
                    log.log(
                        logging.DEBUG if expected else logging.WARNING,
                        "schema fence check failed",
                        extra={"target": target, "error": entry.error},
                        exc_info=not expected,
                    )
                    continue
                entry.error = None
                entry.checked_at = now
                entry.check_number = number
                state = TargetState(target, entry.own_version, index, schema_version_of(meta))
                self._update(entry, state)

    async def _read(self, target: str) -> tuple[str | None, Mapping[str, Any]]:
        """The index `target`'s writes land in, and its ``_meta`` (None, {}: none)."""
        parsed = parse_physical_name(target)
        if parsed is not None:
            for info in await self._admin.list_indices(parsed[0]):
                if info.name == target:
                    return target, info.meta
        written = await self._admin.write_index(target)
        if written is None:
            return None, {}
        return written.index, written.meta

    def _update(self, entry: _TargetCheck, state: TargetState) -> None:
        before = entry.state
        entry.state = state
        parsed = parse_physical_name(state.target)  # ``<alias>_v<N>``, or an alias
        alias = state.target if parsed is None else parsed[0]
        if self._observer is not None:
            self._observer.set_fenced(alias, state.fenced)
            parsed = None if state.index is None else parse_physical_name(state.index)
            if parsed is not None:
                self._observer.set_alias_physical_index(alias, parsed[1])
        was_fenced = before is not None and before.fenced
        if state.fenced and (not was_fenced or before != state):
            log.warning(state.reason(), extra=state.as_json())
        elif was_fenced and not state.fenced:
            log.info(
                f"schema fence lifted: {state.target} writes to {state.index} "
                f"(projection_schema_version {state.index_version}); writes resume",
                extra=state.as_json(),
            )
