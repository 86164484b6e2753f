# searchsync — the two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
PY    := .venv/bin/python
STACK := deploy/local/stack.sh
PYTEST_ARGS ?=

.PHONY: help install install-python venv dist image up down status demo test test-repeat check-bare test-unit test-integration faults lint typecheck fmt bench bench-rebuild bench-repair bench-recovery bench-relay clean

help:
	@echo "make demo   bring the local stack up and run searchsync on a stream of real page writes"
	@echo "           RELAY=polling make demo: the same without Kafka Connect (searchsync relay publishes the outbox)"
	@echo "           SEARCH_ENGINE=opensearch make up|demo: OpenSearch in place of Elasticsearch (same port)"
	@echo "make test   bring the stack up, run unit + integration tests, tear the stack down"
	@echo "make test-repeat N=3   the integration suite N times on one stack: any test that failed once"
	@echo "make faults SEED=1 COUNT=200   the fault-injection suite (tests/faults/README.md)"
	@echo "make dist   the sdist and the wheel in dist/ (needs Python only: no database, no JDK)"
	@echo "make image  the container image (Dockerfile) with podman or buildah, then runs it: deploy/README.md"
	@echo "make up | down | status | clean | lint | typecheck | bench | bench-rebuild | bench-repair | bench-recovery | bench-relay | check-bare"

# What the machine lacks (Debian packages: MariaDB, Maven, a JDK ...): installed as root, otherwise
# the exact command is printed. The one install step of `make demo`, `make test` and .ci/run.
install:
	@bash deploy/install.sh

# What the Python environment alone needs (python3-venv): `make venv` and `make dist` ask for
# nothing else, so a machine without MariaDB or a JDK can build and test the package.
install-python:
	@bash deploy/install.sh python

# The virtualenv, rebuilt when pyproject.toml changes.
.venv/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv .venv
	@$(PY) -m pip install -q -U pip
	@$(PY) -m pip install -q -e '.[dev]'
	@touch $@

venv: install-python .venv/.installed

# The sdist and the wheel (with py.typed and the resources), built from the sdist as a user's
# pip would; tests/unit/test_dist.py installs the wheel alone into a clean virtualenv.
# Stale build/ and egg-info could carry files package-data no longer names: they go first.
dist: venv
	@rm -rf dist build consumer/searchsync.egg-info
	@out=$$($(PY) -m build --outdir dist . 2>&1) || { echo "$$out"; exit 1; }
	@ls dist

# The container image from the wheel (Dockerfile): deploy/image/build.sh, IMAGE names it.
image: dist
	@bash deploy/image/build.sh

up: install venv
	@bash $(STACK) up

down:
	@bash $(STACK) down

status:
	@bash $(STACK) status

# Unit tests need nothing running; integration tests need the stack (and fail, never skip, without it).
test-unit: venv
	@bash deploy/pytest.sh tests/unit $(PYTEST_ARGS)

# Integration tests run the search contract on OpenSearch too: it runs beside Elasticsearch (:9201).
test-integration: venv install
	@SEARCH_ENGINE=elasticsearch WITH_OPENSEARCH=1 bash $(STACK) up
	@bash deploy/pytest.sh tests/integration $(PYTEST_ARGS)

# The integration suite N times on one stack (what `make demo` left running is stopped first);
# reports every test that failed in any run, and fails if one did.
N ?= 3
test-repeat: venv install
	@SEARCH_ENGINE=elasticsearch WITH_OPENSEARCH=1 bash $(STACK) up
	@bash $(STACK) apps-down
	@bash deploy/test-repeat.sh $(N) $(PYTEST_ARGS)

# The fault-injection suite (tests/faults/README.md): the stale-delete tests including the
# Elasticsearch restart, then schedules SEED .. SEED+COUNT-1, each about 30-120 s; against the
# stack the SEARCHSYNC_* / deploy/local env names (default: the local stack).
SEED  ?= 1
COUNT ?= 10
faults: venv up
	@FAULTS_RESTARTS=1 bash deploy/pytest.sh tests/faults/test_stale_delete.py $(PYTEST_ARGS)
	@$(PY) -m tests.faults --seed $(SEED) --count $(COUNT) $(FAULTS_ARGS)

# The README's test command: lint and types first, then what `make demo` left running stops (its
# consumer and exporter would share topics, rows and the canary), the stack comes up, every test runs,
# the stack goes down again (also when tests fail); the exit code is the tests'. OpenSearch runs
# beside Elasticsearch (:9201) for the search contract and the OpenSearch end-to-end tests.
# `make dist` first: the wheel test installs that wheel (TEST_DIST) into a clean venv.
test: install venv lint typecheck dist
	@set -o pipefail; rc=0; \
	bash $(STACK) apps-down; \
	SEARCH_ENGINE=elasticsearch WITH_OPENSEARCH=1 bash $(STACK) up || { bash $(STACK) down; exit 1; }; \
	TEST_DIST=dist bash deploy/pytest.sh tests $(PYTEST_ARGS) || rc=$$?; \
	bash $(STACK) down >/dev/null || true; \
	exit $$rc

demo: install venv up
	@bash deploy/demo.sh

lint: venv
	@.venv/bin/ruff check consumer tests bench deploy
	@.venv/bin/ruff format --check consumer tests bench deploy
	@.venv/bin/hadolint Dockerfile

fmt: venv
	@.venv/bin/ruff format consumer tests bench deploy
	@.venv/bin/ruff check --fix consumer tests bench deploy

typecheck: venv
	@.venv/bin/mypy --strict consumer bench

bench: venv up
	@$(PY) -m bench.pipeline_bench

bench-rebuild: venv up
	@$(PY) -m bench.rebuild_bench

# The polling relay against Debezium, side by side (bench/README.md).
bench-relay: venv up
	@$(PY) -m bench.relay_bench $(RELAY_BENCH_ARGS)

# One repair-wheel rotation against bare MySQL and Elasticsearch scans (bench/README.md).
bench-repair: venv up
	@$(PY) -m bench.repair_bench

# Recovery after kill -9 and service restarts, consumer RSS through an ES outage (bench/README.md).
# It RESTARTS the stack's services: point it at a stack of your own (deploy/local/env.sh names it,
# SEARCHSYNC_* the consumer's side). RECOVERY_ARGS=--es-outage-s 120 for a shorter outage.
bench-recovery: venv up
	@$(PY) -m bench.recovery_bench $(RECOVERY_ARGS)

clean:
	@bash $(STACK) clean

# The newcomer's check: a fresh clone in a mode-700 directory runs `make demo`, then `make test`.
check-bare:
	@bash deploy/check-bare-machine.sh $(CHECK_ARGS)
