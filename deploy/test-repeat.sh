#!/usr/bin/env bash
# make test-repeat N=3: the integration suite N times on one running stack; reports every test that
# failed in any run (a test that fails once in N is a race to find, not luck) and exits 1 if any did.
# usage: deploy/test-repeat.sh N [pytest args ...]
set -uo pipefail
cd "$(dirname "$0")/.."
n=${1:?usage: $0 N [pytest args]}
shift
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "test-repeat: N must be a whole number above 0, got '$n'" >&2; exit 2; }
out=$(mktemp -d)
for ((i = 1; i <= n; i++)); do
  t0=$SECONDS
  bash deploy/pytest.sh tests/integration -q -p no:cacheprovider --junitxml="$out/run-$i.xml" "$@" \
    >"$out/run-$i.log" 2>&1
  rc=$?
  echo "test-repeat: run $i of $n: exit $rc in $((SECONDS - t0)) s ($(tail -n 1 "$out/run-$i.log"))"
done
.venv/bin/python - "$out" "$n" <<'PY'
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

out, n = Path(sys.argv[1]), int(sys.argv[2])
failed: Counter[str] = Counter()
ran = 0
for i in range(1, n + 1):
    path = out / f"run-{i}.xml"
    if not path.exists():
        failed[f"<run {i} wrote no report: see {out}/run-{i}.log>"] += 1
        continue
    for case in ET.parse(path).iter("testcase"):
        ran += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed[f"{case.get('classname')}::{case.get('name')}"] += 1
print(f"test-repeat: {n} runs, {ran} test runs, {len(failed)} tests failed at least once")
for name, count in sorted(failed.items()):
    print(f"  failed {count} of {n}: {name}")
print(f"test-repeat: logs and reports in {out}")
sys.exit(1 if failed or ran == 0 else 0)
PY
