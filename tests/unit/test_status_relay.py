"""`searchsync status`'s relay section (docs/relay.md, "Status"): shown where the relay is
enabled or has claimed rows, with DEAD rows, stale claims and a long-waiting due row as
warnings; left out where only Debezium publishes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import orjson
import pytest
from searchsync.cli import main
from searchsync.config import RelaySettings
from searchsync.exit_codes import ExitCode
from searchsync.ops.status_probes import relay_section
from searchsync.relay.port import Failure
from test_status import _system

from tests.fakes.relay_store import FakeRelayStore

CONSUMER = "http://127.0.0.1:9"  # no consumer answers there: a warning, not a problem


async def relay_rows() -> FakeRelayStore:
    """Seven rows created at 1000 s: one DEAD, one waiting to retry, two published, two claimed
    by a relay that died at 1030 s, one due since 1000 s; it is 1130 s now."""
    store = FakeRelayStore(now=1_000.0)
    for i in range(7):
        store.add(f"p{i}")
    store.now = 1_030.0
    [dead, retrying] = [e.id for e in await store.claim("r1", 2)]
    await store.mark_failed("r1", [Failure(dead, "too large", timedelta(0))], 1)
    await store.mark_failed("r1", [Failure(retrying, "away", timedelta(hours=1), False)], 1)
    await store.mark_published([e.id for e in await store.claim("r2", 2)])
    await store.claim("host:42:dead", 2)
    store.now = 1_130.0
    return store


async def test_the_section_counts_rows_and_warns_of_dead_rows_stale_claims_and_waiting_rows() -> (
    None
):
    status = await (await relay_rows()).status(60.0)
    section = relay_section(status, RelaySettings(enabled=True, claim_timeout_s=60.0))
    d = section.data
    assert section.healthy  # warnings only: the DLQ's dead letters are warnings too
    assert (d["pending"], d["retrying"], d["processing"], d["published"], d["dead"]) == (
        2,
        1,
        2,
        2,
        1,
    )
    assert d["stale_claims"] == 2 and d["holders"] == {"host:42:dead": 2}
    assert d["oldest_pending_age_seconds"] == 130.0 and d["oldest_due_age_seconds"] == 130.0
    [dead, stale, waiting] = section.warnings
    assert "1 DEAD outbox row(s)" in dead and "relay revive" in dead
    assert "2 claim(s) older than relay.claim_timeout_s 60s" in stale
    assert "waited 130s for a relay" in waiting


async def test_a_quiet_relay_has_no_warnings() -> None:
    store = FakeRelayStore(now=10.0)
    store.add("a")
    await store.mark_published([e.id for e in await store.claim("r1", 1)])
    section = relay_section(await store.status(60.0), RelaySettings(enabled=True))
    assert section.warnings == () and section.data["published"] == 1


def test_status_shows_the_relay_section_when_a_relay_claimed_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    services = _system(members=["c1"], relay=asyncio.run(relay_rows()))
    code = main(["status", "--json", "--consumer", CONSUMER], runtime=services)
    report = orjson.loads(capsys.readouterr().out)
    relay = report["sections"]["relay"]
    assert relay["enabled"] is False and relay["dead"] == 1 and relay["stale_claims"] == 2
    assert any(w.startswith("relay: 1 DEAD outbox row(s)") for w in report["warnings"])
    assert code == ExitCode.OK
    main(["status", "--consumer", CONSUMER], runtime=services)
    text = capsys.readouterr().out
    assert "relay: WARNING" in text
    assert "2 pending (1 waiting to retry), 2 processing, 2 published, 1 dead" in text
    assert "claims: host:42:dead 2; 2 older than 60s" in text


def test_status_leaves_the_section_out_where_only_debezium_publishes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = FakeRelayStore()
    store.add("a")  # PENDING forever: Debezium never marks rows
    main(["status", "--json", "--consumer", CONSUMER], runtime=_system(members=["c1"], relay=store))
    assert "relay" not in orjson.loads(capsys.readouterr().out)["sections"]


def test_status_shows_an_enabled_relay_with_no_rows_yet(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHSYNC_RELAY_ENABLED", "true")
    main(["status", "--json", "--consumer", CONSUMER], runtime=_system(members=["c1"]))
    relay = orjson.loads(capsys.readouterr().out)["sections"]["relay"]
    assert relay["enabled"] is True and relay["pending"] == 0 and relay["warnings"] == []
