"""Every alert rule in deploy/prometheus is tested by `promtool test rules`, and the tests pass.

promtool is Debian's `prometheus` package, which deploy/install.sh installs: a missing promtool is
a failure here, never a skip.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

PROMETHEUS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"
RULES = PROMETHEUS / "searchsync-alerts.yml"
TESTS = PROMETHEUS / "searchsync-alerts.test.yml"


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool is missing: run deploy/install.sh (Debian: prometheus)"
    return subprocess.run(
        [promtool, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_promtool_accepts_the_rules() -> None:
    done = _promtool("check", "rules", str(RULES))
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_unit_tests_pass() -> None:
    done = _promtool("test", "rules", str(TESTS))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_has_a_case_that_fires_it() -> None:
    rules = yaml.safe_load(RULES.read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    cases = yaml.safe_load(TESTS.read_text())["tests"]
    fired = {
        check["alertname"]
        for case in cases
        for check in case.get("alert_rule_test", [])
        if check.get("exp_alerts")
    }
    assert alerts - fired == set(), "alerts without a firing promtool case"
    assert fired <= alerts


def test_a_broken_expectation_fails(tmp_path: Path) -> None:
    """Guard against a promtool that passes anything: one changed summary must fail the run."""
    text = TESTS.read_text().replace("is 6000 and still growing", "is 6001 and still growing")
    assert text != TESTS.read_text()
    (tmp_path / "searchsync-alerts.yml").write_text(RULES.read_text())
    broken = tmp_path / "broken.test.yml"
    broken.write_text(text)
    assert _promtool("test", "rules", str(broken)).returncode != 0
