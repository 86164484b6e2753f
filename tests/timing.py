"""Deadlines of the tests that wait on real services, stretched on a slow or busy machine.

Every wait of the integration and fault tests is a condition polled until a deadline; the
deadline is `scaled`: ``TEST_TIME_SCALE`` (a number > 0, default 1) multiplies it, so a machine
that runs the suite beside other work can give every wait more room without a test changing.
"""

from __future__ import annotations

import os
import time


def time_scale() -> float:
    """``TEST_TIME_SCALE``, checked: a bad value fails the run with the form it needs."""
    raw = os.environ.get("TEST_TIME_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        scale = 0.0
    if not scale > 0 or scale != scale or scale == float("inf"):
        raise ValueError(f"TEST_TIME_SCALE must be a finite number above 0, got {raw!r}")
    return scale


def scaled(seconds: float) -> float:
    """`seconds` of waiting on this machine."""
    return seconds * time_scale()


def deadline(seconds: float) -> float:
    """The `time.monotonic()` at which a wait of `seconds` (scaled) gives up."""
    return time.monotonic() + scaled(seconds)
