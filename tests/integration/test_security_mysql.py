"""MySQL TLS on the real MariaDB: the shared server has TLS off (``have_ssl = DISABLED``), so a
pool configured with ``ssl_mode`` must refuse it rather than talk plaintext (aiomysql alone would
fall back silently); without ``ssl_mode`` the same server is fine."""

from __future__ import annotations

import os

import certifi
import pytest
from searchsync.config import load_settings
from searchsync.errors import ConfigError
from searchsync.mysql.pool import close_pool, open_pool

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


def _env(**extra: str) -> dict[str, str]:
    names = ("HOST", "PORT", "USER", "PASSWORD", "DATABASE")
    env = {
        f"SEARCHSYNC_MYSQL_{n}": os.environ[f"SEARCHSYNC_MYSQL_{n}"]
        for n in names
        if f"SEARCHSYNC_MYSQL_{n}" in os.environ
    }
    env.update({f"SEARCHSYNC_MYSQL_{k.upper()}": v for k, v in extra.items()})
    return env


@pytest.mark.parametrize("mode", ["verify_ca", "verify_identity"])
async def test_a_tls_pool_refuses_a_server_without_tls(mode: str) -> None:
    settings = load_settings(_env(ssl_mode=mode, ssl_ca=certifi.where()))
    with pytest.raises(ConfigError) as caught:
        await open_pool(settings.mysql, maxsize=1)
    assert caught.value.key == "mysql.ssl_mode"
    assert "unencrypted connection" in str(caught.value.got)


async def test_the_same_server_without_ssl_mode_connects() -> None:
    pool = await open_pool(load_settings(_env()).mysql, maxsize=1)
    try:
        async with pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute("SELECT @@have_ssl")
            (have_ssl,) = await cur.fetchone()
    finally:
        await close_pool(pool)
    assert have_ssl == "DISABLED"  # the premise of the test above
