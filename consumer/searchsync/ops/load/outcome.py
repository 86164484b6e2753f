"""What `searchsync index load` is asked to do, what came of it, and the name of a load."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from searchsync.errors import InvalidRequest
from searchsync.ops.load.parts import LoadRecord
from searchsync.ops.rebuild.records import record_summary

MAX_PARTS = 4_096
_PART = re.compile(r"(\d+)/(\d+)")


def parse_part(text: str) -> tuple[int, int]:
    """``i/N`` (0 <= i < N <= `MAX_PARTS`) as ``(i, N)``; `InvalidRequest` otherwise."""
    match = _PART.fullmatch(text.strip())
    if match is None:
        raise InvalidRequest(f"--part {text!r}: want i/N, e.g. 0/4 (part i of N, from 0)")
    part, parts = int(match[1]), int(match[2])
    if not 0 <= part < parts <= MAX_PARTS:
        raise InvalidRequest(f"--part {text!r}: want 0 <= i < N <= {MAX_PARTS}")
    return part, parts


def load_key(target_index: str, where: str | None, parts: int) -> str:
    """The name of a load: every process loading `target_index` with the same `where` in the same
    number of parts shares it (and its key ranges)."""
    text = f"{target_index}\0{where or ''}\0{parts}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class LoadOptions:
    aggregate_type: str
    part: int = 0
    parts: int = 1
    where: str | None = None
    again: bool = False  # load a finished part again
    dry_run: bool = False
    wait_for_live: bool = True  # once scanned, wait for the live group to pass the watermark
    stop_after_chunks: int | None = None  # drills and tests: stop as if killed after K chunks


@dataclass(slots=True)
class LoadOutcome:
    ok: bool
    action: str  # planned, done, already_done, interrupted, waiting
    message: str
    record: LoadRecord | None = None
    rows_this_run: int = 0  # rows of the chunks this run finished
    resumed_after: str | None = None  # the key this run continued after (None: from the start)
    rows_in_scope: int | None = None  # the part's rows when this run began (done + left)
    seconds: float = 0.0
    parts_done: int = 0  # of every part of the load, as this run last read them
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def rows_per_s(self) -> float:
        return self.rows_this_run / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        r = self.record
        return {
            "ok": self.ok,
            "action": self.action,
            "message": self.message,
            "rows_this_run": self.rows_this_run,
            "resumed_after": self.resumed_after,
            "rows_in_scope": self.rows_in_scope,
            "seconds": round(self.seconds, 3),
            "rows_per_s": round(self.rows_per_s, 1),
            "parts_done": self.parts_done,
            "load": None if r is None else record_summary(r, "started_at", "updated_at", "message"),
            "failures": [{"id": i, "why": w} for i, w in self.failures],
        }
