#!/usr/bin/env bash
# make demo: the stack is up (make up ran first); run searchsync's main job and show it working.
# SEARCH_ENGINE=opensearch make demo: the stack runs OpenSearch, and so the demo's searchsync.
set -euo pipefail
cd "$(dirname "$0")/.."
export SEARCHSYNC_SEARCH_ENGINE=${SEARCHSYNC_SEARCH_ENGINE:-${SEARCH_ENGINE:-elasticsearch}}
exec .venv/bin/python deploy/demo.py
