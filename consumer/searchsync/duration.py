"""Durations as operators write them (``7d``, ``36h``, ``1d12h``): one parser for the command line
and the settings, so both accept the same forms."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Final

DURATION_FORM: Final = "a duration like 7d, 36h, 90m, 45s or 1d12h (units d, h, m, s)"

_PART = re.compile(r"(\d{1,9})([dhms])")
_WHOLE = re.compile(r"(?:\d{1,9}[dhms])+")
_SECONDS: Final = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta:
    compact = text.strip().lower()
    if not _WHOLE.fullmatch(compact):
        raise ValueError(f"expected {DURATION_FORM}, got {text!r}")
    seconds = sum(int(n) * _SECONDS[unit] for n, unit in _PART.findall(compact))
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """`value` in the same notation, largest units first (``timedelta(hours=36)`` -> ``1d12h``)."""
    seconds = int(value.total_seconds())
    if seconds <= 0:
        return "0s"
    parts: list[str] = []
    for unit, size in _SECONDS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
