"""Scratch tables of a test on the shared MariaDB: created as root over the server's socket,
granted like the example's tables (the application's user writes them, the consumer's user
reads them), and dropped afterwards with their grants (MariaDB keeps a dropped table's grants).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence

from tests.integration.conftest_mysql import MysqlTarget, root_socket
from tests.scratch import admin_execute

__all__ = ["scratch_tables"]


@contextlib.asynccontextmanager
async def scratch_tables(
    target: MysqlTarget, tables: Sequence[str], ddl: Sequence[str]
) -> AsyncIterator[None]:
    """Run `ddl` (creating `tables`), grant them, and drop them when the block ends."""
    users = (f"'{target.app_user}'@'%'", f"'{target.consumer_user}'@'%'")
    app, consumer = users
    await admin_execute(
        root_socket(),
        target.database,
        [
            *ddl,
            *(f"GRANT SELECT, INSERT, UPDATE, DELETE ON `{t}` TO {app}" for t in tables),
            *(f"GRANT SELECT ON `{t}` TO {consumer}" for t in tables),
        ],
    )
    try:
        yield
    finally:
        await admin_execute(
            root_socket(),
            target.database,
            [
                *(f"REVOKE ALL PRIVILEGES ON `{t}` FROM {u}" for t in tables for u in users),
                *(f"DROP TABLE IF EXISTS `{t}`" for t in tables),
            ],
        )
