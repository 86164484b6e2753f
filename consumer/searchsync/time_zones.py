"""``[mysql] time_zone``: the zone a naive DATETIME value is read in (docs/consumer.md, "Column
types")."""

from __future__ import annotations

import contextlib
from datetime import UTC, timedelta, timezone, tzinfo
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

TIME_ZONE_FORM: Final = "'UTC', an offset like '+05:30', or an IANA zone name like 'Europe/Berlin'"


def parse_time_zone(name: str) -> tzinfo:
    text = name.strip()
    if text.upper() in ("UTC", "Z", "+00:00", "-00:00"):
        return UTC
    if text[:1] in "+-" and len(text) == 6 and text[3] == ":":
        hours, minutes = text[1:3], text[4:6]
        if hours.isdigit() and minutes.isdigit() and int(hours) <= 14 and int(minutes) < 60:
            offset = timedelta(hours=int(hours), minutes=int(minutes))
            return timezone(-offset if text[0] == "-" else offset)
    elif text and " " not in text:
        with contextlib.suppress(ZoneInfoNotFoundError, ValueError, OSError):
            return ZoneInfo(text)
    raise ValueError(f"time zone {name!r}: want {TIME_ZONE_FORM}")
