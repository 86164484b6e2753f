"""The garbage collector's thresholds for the long-running commands (docs/consumer.md, "Garbage
collection").

CPython starts a young-generation collection after every 700 net allocations of container
objects, and a full one whenever the objects promoted since the last full collection reach a
quarter of the old generation. searchsync's work comes in pages and batches of thousands of small
containers (a repair page of 5 000 entries, a bulk response, a poll of 500 events) that live just
long enough to be promoted, so with the default thresholds one run of `bench.repair_bench` (its
setup, scans and a rotation over 100 000 rows) ran about 3 000 young and 23 full collections,
each full one traversing every live object, 1.3 s in all; its rotation took 2.8-3.2 s, against
2.0-2.2 s with this tuning (bench/README.md, "GC thresholds").

Nearly all of that garbage is freed by reference counting anyway; the collector is only needed for
cycles. `tune_for_throughput` raises the young generation's threshold to `YOUNG_THRESHOLD` and
keeps the older generations' ratios: cycles are still collected, after 50 000 net allocations
instead of 700, which bounds the cyclic garbage waiting for a collection to a few megabytes.

`searchsync run`, `rebuild` and `repair` call it once at start; the benchmarks call it where they
run the same work in their own process. Nothing changes at import.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["YOUNG_THRESHOLD", "tune_for_throughput"]

YOUNG_THRESHOLD: Final = 50_000


def tune_for_throughput() -> tuple[int, int, int]:
    """Raise the young generation's threshold to `YOUNG_THRESHOLD` (the older generations keep
    theirs); return the thresholds before, for a caller that restores them."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, before[1], before[2])
    return before
