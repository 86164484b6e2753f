"""A MySQL or MariaDB server that only records: a pool, connections and cursors with the driver's
shape (``acquire``/``release``, ``begin``/``commit``, ``cursor().execute``), answering every query
with the rows a test queued (or nothing). It lets a test collect the exact statement texts the
package sends to each server family."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["SERVER_VERSIONS", "RecordingConnection", "RecordingPool"]

# what each family's handshake and ``VERSION()`` answer
SERVER_VERSIONS: dict[str, tuple[str, str]] = {
    "mysql": ("8.4.3", "MySQL Community Server - GPL"),
    "mariadb": ("10.11.19-MariaDB-0+deb12u1-log", "Debian 12"),
}


class _Cursor:
    def __init__(self, conn: RecordingConnection) -> None:
        self._conn = conn
        self.connection = conn
        self._rows: list[Sequence[Any]] = []

    async def __aenter__(self) -> _Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, sql: str, args: Any = None) -> int:
        self._conn.statements.append(sql)
        if sql == "SELECT VERSION(), @@version_comment":
            self._rows = [self._conn.version]
        else:
            self._rows = list(self._conn.answers.popleft()) if self._conn.answers else []
        return len(self._rows)

    async def fetchone(self) -> Sequence[Any] | None:
        return self._rows.pop(0) if self._rows else None

    async def fetchall(self) -> list[Sequence[Any]]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchmany(self, size: int) -> list[Sequence[Any]]:
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows


class RecordingConnection:
    closed = False

    def __init__(self, flavor: str, statements: list[str]) -> None:
        self.version = SERVER_VERSIONS[flavor]
        self.statements = statements
        self.answers: deque[Iterable[Sequence[Any]]] = deque()

    def get_server_info(self) -> str:
        return self.version[0]

    def cursor(self, cursor_class: type | None = None) -> _Cursor:
        return _Cursor(self)

    async def begin(self) -> None:
        self.statements.append("BEGIN")

    async def commit(self) -> None:
        self.statements.append("COMMIT")

    async def rollback(self) -> None:
        self.statements.append("ROLLBACK")

    def close(self) -> None:
        self.closed = True


class _Acquired:
    """What ``pool.acquire()`` returns: awaitable, and an async context manager."""

    def __init__(self, pool: RecordingPool) -> None:
        self._pool = pool

    def __await__(self) -> Any:
        return self._take().__await__()

    async def _take(self) -> RecordingConnection:
        return self._pool.connection

    async def __aenter__(self) -> RecordingConnection:
        return self._pool.connection

    async def __aexit__(self, *exc: object) -> None:
        return None


class RecordingPool:
    """One connection to a server of `flavor`; `statements` is everything sent, in order (the
    driver's ``init_command`` first when the pool was made through ``aiomysql.create_pool``)."""

    def __init__(self, flavor: str, **driver_kwargs: Any) -> None:
        self.statements: list[str] = []
        self.driver_kwargs = driver_kwargs
        if driver_kwargs.get("init_command"):
            self.statements.append(driver_kwargs["init_command"])
        self.connection = RecordingConnection(flavor, self.statements)
        self.closed = False

    def acquire(self) -> _Acquired:
        return _Acquired(self)

    async def release(self, conn: Any) -> None:
        return None

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None
