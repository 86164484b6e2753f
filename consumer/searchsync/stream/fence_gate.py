"""The schema fence as the processor applies it: verdicts for fenced works and failed writes.

`SchemaFence` (searchsync/stream/fence.py) knows which targets are fenced; this gate turns that
into verdicts (docs/design.md, "Schema fence"):

- before anything is read or written, every work of a fenced target (or of one whose fence could
  never be checked) is answered SCHEMA_FENCED (SYSTEMIC: retried, never dead-lettered, its
  offsets not committed);
- after a batch, each target a write failed for is checked again, and a failure on a target now
  fenced becomes SCHEMA_FENCED (a MAPPING_ERROR from a swapped-in index with another mapping is
  the fence's business, not a dead letter).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from searchsync.errors import ErrorCode
from searchsync.projection import Projector
from searchsync.stream.coalesce import Work
from searchsync.stream.fence import SchemaFence, TargetState
from searchsync.stream.verdict import Result, Verdict

__all__ = ["FenceGate"]


class FenceGate:
    """Applies one `SchemaFence` to the processor's works and verdicts."""

    def __init__(self, fence: SchemaFence) -> None:
        self._fence = fence

    def mark(self) -> int:
        """Taken before the writes, passed to `after_write` as `since`."""
        return self._fence.mark()

    async def hold(
        self, target: str, projector: Projector, works: Sequence[Work]
    ) -> list[Verdict] | None:
        """SCHEMA_FENCED verdicts for `works` when `target` is fenced; None: write them."""
        state = await self._fence.check(target, projector.schema_version)
        if state is None:  # never checked successfully: nothing is written unchecked
            message = (
                f"the schema fence of {target} cannot be checked: {self._fence.unchecked(target)}"
            )
        elif state.fenced:
            message = state.reason()
        else:
            return None
        return [
            Verdict(
                work,
                Result.FAILED,
                ErrorCode.SCHEMA_FENCED,
                message,
                alias=target,
                schema_version=projector.schema_version,
            )
            for work in works
        ]

    async def after_write(self, verdicts: list[Verdict], *, since: int) -> list[Verdict]:
        """`verdicts`, with the failed writes of a target fenced meanwhile as SCHEMA_FENCED.

        `since`: the `mark` taken before the writes (a check started after it counts)."""
        failed = sorted({v.alias for v in verdicts if not v.finished and v.alias is not None})
        fenced: dict[str, TargetState] = {}
        for target in failed:
            state = await self._fence.recheck(target, since=since)
            if state is not None and state.fenced:
                fenced[target] = state
        if not fenced:
            return verdicts
        return [
            _as_fenced(v, fenced[v.alias]) if not v.finished and v.alias in fenced else v
            for v in verdicts
        ]


def _as_fenced(verdict: Verdict, state: TargetState) -> Verdict:
    return replace(verdict, code=ErrorCode.SCHEMA_FENCED, message=state.reason(), unexpected=False)
