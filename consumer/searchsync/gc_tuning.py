"""The garbage collector's thresholds for the long-running commands (docs/consumer.md, "Garbage
collection"; measured in bench/README.md, "GC thresholds").

searchsync's batches of thousands of short-lived containers outlive the default young threshold
(700) and get traversed by full collections, though reference counting frees nearly all of them.
`searchsync run`, `rebuild` and `repair` call `tune_for_throughput` once; nothing changes at import.
"""

from __future__ import annotations

import gc
from typing import Final

YOUNG_THRESHOLD: Final = 50_000


def tune_for_throughput() -> tuple[int, int, int]:
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, before[1], before[2])
    return before
