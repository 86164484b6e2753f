"""Fixtures for the fault suite's tests (they need the real stack, like tests/integration).

Tests marked ``restarts`` restart a service of the stack (Elasticsearch): they run only when
``FAULTS_RESTARTS=1`` (`make faults` sets it) and are deselected otherwise, so the
subset that `make test` collects never restarts a service other tests are using.
"""

from __future__ import annotations

import os

import pytest

from tests.integration.conftest import _stack_is_up, unique  # noqa: F401  (fixtures)
from tests.integration.conftest_mysql import *  # noqa: F403  (MariaDB fixtures)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "restarts: restarts a service of the stack")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("FAULTS_RESTARTS") == "1":
        return
    keep = [i for i in items if i.get_closest_marker("restarts") is None]
    gone = [i for i in items if i.get_closest_marker("restarts") is not None]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep
