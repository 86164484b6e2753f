# searchsync — the two commands a newcomer needs: `make demo` and `make test`.
SHELL := /bin/bash
PY    := .venv/bin/python
STACK := deploy/local/stack.sh
PYTEST_ARGS ?=

.PHONY: help install venv up down status demo test check-bare test-unit test-integration faults lint typecheck fmt bench bench-rebuild bench-repair bench-recovery bench-relay clean

help:
	@echo "make demo   bring the local stack up and run searchsync on a stream of real page writes"
	@echo "           RELAY=polling make demo: the same without Kafka Connect (searchsync relay publishes the outbox)"
	@echo "           SEARCH_ENGINE=opensearch make up|demo: OpenSearch in place of Elasticsearch (same port)"
	@echo "make test   bring the stack up, run unit + integration tests, tear the stack down"
	@echo "make faults SEED=1 COUNT=200   the fault-injection suite (tests/faults/README.md)"
	@echo "make up | down | status | clean | lint | typecheck | bench | bench-rebuild | bench-repair | bench-recovery | bench-relay | check-bare"

# What the machine lacks (Debian packages: MariaDB, Maven, a JDK ...): installed as root, otherwise
# the exact command is printed. The one install step of `make demo`, `make test` and .ci/run.
install:
	@bash deploy/install.sh

# The virtualenv, rebuilt when pyproject.toml changes.
.venv/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv .venv
	@$(PY) -m pip install -q -U pip
	@$(PY) -m pip install -q -e '.[dev]'
	@touch $@

venv: install .venv/.installed

up: venv
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

# The fault-injection suite (tests/faults/README.md): the stale-delete tests including the
# Elasticsearch restart, then schedules SEED .. SEED+COUNT-1, each about 30-120 s; against the
# stack the SEARCHSYNC_* / deploy/local env names (default: the local stack).
SEED  ?= 1
COUNT ?= 10
faults: venv up
	@FAULTS_RESTARTS=1 bash deploy/pytest.sh tests/faults/test_stale_delete.py $(PYTEST_ARGS)
	@$(PY) -m tests.faults --seed $(SEED) --count $(COUNT) $(FAULTS_ARGS)

# The README's test command: lint and types first, then the stack comes up, every test runs,
# the stack goes down again (also when tests fail); the exit code is the tests'. OpenSearch runs
# beside Elasticsearch (:9201) for the search contract and the OpenSearch end-to-end tests.
test: venv lint typecheck
	@set -o pipefail; rc=0; \
	SEARCH_ENGINE=elasticsearch WITH_OPENSEARCH=1 bash $(STACK) up || { bash $(STACK) down; exit 1; }; \
	bash deploy/pytest.sh tests $(PYTEST_ARGS) || rc=$$?; \
	bash $(STACK) down >/dev/null || true; \
	exit $$rc

demo: venv up
	@bash deploy/demo.sh

lint: venv
	@.venv/bin/ruff check consumer tests bench deploy
	@.venv/bin/ruff format --check consumer tests bench deploy

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
