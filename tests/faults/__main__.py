"""`python -m tests.faults --seed S --count N`: run schedules S .. S+N-1 against the stack the
environment names (tests/faults/README.md); one summary line per schedule, then the total.
`--only relay` (or `debezium`) runs the first N schedules from seed S with that publisher,
skipping the others (a seed keeps its schedule). A failing schedule prints its seed and keeps its
logs; exit 1 if any failed."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import time
from pathlib import Path

from tests.faults.runner import run_schedule
from tests.faults.schedule import ALL_FAULTS, RELAY_FAULTS, Fault, Schedule, make_schedule
from tests.faults.services import Stack


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.faults")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--log-dir", type=Path, default=Path("/tmp/searchsync-faults"))
    p.add_argument("--faults", default="", help="comma-separated fault kinds (default: all)")
    p.add_argument("--keep-logs", action="store_true", help="keep the logs of passing runs too")
    p.add_argument(
        "--only", choices=("relay", "debezium"), help="only the schedules with this publisher"
    )
    args = p.parse_args(argv)
    kinds = frozenset(Fault(k) for k in args.faults.split(",") if k) or ALL_FAULTS
    if args.only == "relay" and not kinds & RELAY_FAULTS:
        p.error("--only relay needs a relay fault kind in --faults")
    if args.only == "debezium" and kinds <= RELAY_FAULTS:
        p.error("--only debezium needs a fault kind other than the relay's in --faults")
    schedules = _schedules(args.seed, args.count, kinds, args.only)
    run_dir = args.log_dir / time.strftime("run-%Y%m%dT%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    print(f"fault run: seeds {[s.seed for s in schedules]}, logs in {run_dir}")
    stack = Stack.from_env()
    passed = failed = divergent = resurrected = 0
    t0 = time.monotonic()
    for schedule in schedules:
        seed = schedule.seed
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
                f"  FAILED seed {seed}: replay with `make faults SEED={seed} COUNT=1"
                f"{_args_hint(args.faults)}`;"
                f" logs kept in {result.log_dir}",
                flush=True,
            )
            for s in result.steps:
                print(f"    {s}")
    print(
        f"total: {len(schedules)} schedules, {passed} passed, {failed} failed,"
        f" divergent={divergent}, resurrected={resurrected},"
        f" {time.monotonic() - t0:.0f}s; results in"
        f" {run_dir / 'results.jsonl'}"
    )
    return 1 if failed else 0


def _schedules(seed: int, count: int, kinds: frozenset[Fault], only: str | None) -> list[Schedule]:
    out: list[Schedule] = []
    while len(out) < count:
        s = make_schedule(seed, faults=kinds)
        if only is None or s.publisher == only:
            out.append(s)
        seed += 1
    return out


def _args_hint(faults: str) -> str:
    return f" FAULTS_ARGS=--faults={faults}" if faults else ""


if __name__ == "__main__":
    sys.exit(main())
