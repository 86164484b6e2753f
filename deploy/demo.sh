#!/usr/bin/env bash
# make demo: the stack is up (make up ran first); run searchsync's main job and show it working.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python deploy/demo.py
