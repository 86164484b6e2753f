"""How a rebuild reports its progress: each step, and the backfill's rows done / total, rows/s and
ETA: on a terminal one redrawn line, otherwise a line every `interval_s` seconds, and with
``json_lines`` one JSON object per event."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

import orjson


@dataclass(kw_only=True)
class Progress:
    stream: TextIO
    json_lines: bool = False
    interval_s: float = 5.0
    tty: bool | None = None  # None: the stream's own isatty()
    clock: Callable[[], float] = time.monotonic
    label: str = "backfill"  # what the rows' line and event are called ("load" for a load)
    _base_rows: int | None = field(default=None, init=False)
    _last_line: float = field(default=float("-inf"), init=False)
    _drawn: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self._tty = self.stream.isatty() if self.tty is None else self.tty
        self._started = self.clock()

    def step(self, step: str, message: str, **fields: Any) -> None:
        """A step started or finished (watermark, create, catch-up, verify, swap, ...)."""
        if self.json_lines:
            self._emit({"event": "step", "step": step, "message": message, **fields})
            return
        self._end_line()
        print(f"[{step}] {message}", file=self.stream, flush=True)

    def backfill(
        self, rows_done: int, rows_total: int, failed: int, *, final: bool = False
    ) -> None:
        """The rows done of `rows_total` (at least `rows_done`), `failed` of them not indexed."""
        rows_total = max(rows_total, rows_done)
        now = self.clock()
        if self._base_rows is None:
            self._base_rows = rows_done
            self._started = now
        rate = (rows_done - self._base_rows) / max(now - self._started, 1e-9)
        eta = (rows_total - rows_done) / rate if rate > 0 else None  # rows_total >= rows_done
        if self.json_lines:
            self._emit(
                {
                    "event": self.label,
                    "rows_done": rows_done,
                    "rows_total": rows_total,
                    "rows_failed": failed,
                    "rows_per_s": round(rate, 1),
                    "eta_s": None if eta is None else round(eta, 1),
                }
            )
            return
        if not (final or self._tty or now - self._last_line >= self.interval_s):
            return
        self._last_line = now
        share = rows_done / rows_total if rows_total else 1.0
        bar = "#" * int(min(1.0, share) * 30)
        eta_text = "?" if eta is None else f"{eta:.0f}s"
        line = (
            f"{self.label} [{bar:<30}] {rows_done}/{rows_total} rows ({min(share, 1.0):.0%}), "
            f"{rate:.0f} rows/s, ETA {eta_text}, failed {failed}"
        )
        if self._tty:
            self.stream.write("\r\x1b[2K" + line)
            self._drawn = True
            if final:
                self._end_line()
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def _end_line(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self._drawn = False

    def _emit(self, event: dict[str, Any]) -> None:
        print(orjson.dumps(event, default=str).decode(), file=self.stream, flush=True)
