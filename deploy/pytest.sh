#!/usr/bin/env bash
# Runs pytest and gives its exit code meaning: 5 ("no tests collected") is a failure here,
# because a test command that ran nothing has proved nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pytest "$@"
rc=$?
if [[ $rc == 5 ]]; then
  echo "pytest collected no tests from: $* (exit 5); treating that as a failure" >&2
  exit 1
fi
exit $rc
