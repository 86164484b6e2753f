"""`python -m tests.faults --seed S --count N`: run schedules S .. S+N-1 against the stack the
environment names (tests/faults/README.md); one summary line per schedule, then the total.
A failing schedule prints its seed and keeps its logs; exit 1 if any failed."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path

from tests.faults.runner import run_schedule
from tests.faults.schedule import ALL_FAULTS, Fault, make_schedule
from tests.faults.services import Stack


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.faults")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--log-dir", type=Path, default=Path("/tmp/searchsync-faults"))
    p.add_argument("--faults", default="", help="comma-separated fault kinds (default: all)")
    p.add_argument("--keep-logs", action="store_true", help="keep the logs of passing runs too")
    args = p.parse_args(argv)
    kinds = frozenset(Fault(k) for k in args.faults.split(",") if k) or ALL_FAULTS
    run_dir = args.log_dir / time.strftime("run-%Y%m%dT%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"fault run: seeds {args.seed}..{args.seed + args.count - 1}, logs in {run_dir}")
    stack = Stack.from_env()
    passed = failed = divergent = resurrected = 0
    t0 = time.monotonic()
    for seed in range(args.seed, args.seed + args.count):
        schedule = make_schedule(seed, faults=kinds)
        result = asyncio.run(run_schedule(schedule, stack, run_dir))
        print(result.line, flush=True)
        divergent += max(0, result.divergent)
        resurrected += max(0, result.resurrected)
        if result.ok:
            passed += 1
            if not args.keep_logs:
                shutil.rmtree(result.log_dir, ignore_errors=True)
        else:
            failed += 1
            print(
                f"  FAILED seed {seed}: replay with `make faults SEED={seed} COUNT=1`;"
                f" logs kept in {result.log_dir}",
                flush=True,
            )
            for s in result.steps:
                print(f"    {s}")
    print(
        f"total: {args.count} schedules, {passed} passed, {failed} failed, divergent={divergent},"
        f" resurrected={resurrected}, {time.monotonic() - t0:.0f}s; results in"
        f" {run_dir / 'results.jsonl'}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
