"""MySQL (MariaDB) connections: one pool factory, one transaction scope, one error translation.

Every module that talks to MySQL goes through here:

- sessions: utf8mb4, autocommit off, ``READ COMMITTED`` (each statement sees the latest committed
  rows, and a locking read of a missing row takes no gap lock, so two concurrent creates of one
  id collide on the primary key instead of deadlocking), UTC session time zone;
- transactions: `transaction` commits on success, rolls back on error, and *discards* a
  connection whose state is unknown (cancelled mid-query, failed rollback) instead of handing it
  to the next caller;
- errors: `translate_errors` turns driver errors that may heal by themselves (server away,
  deadlock, lock wait timeout) into `TransientError` with a stable code, and bad credentials or
  an unknown database into `ConfigError`. Anything else (SQL bugs, constraint violations) passes
  through unchanged: retrying would not help.

TLS (``[mysql] ssl_mode``, docs/security.md): `tls_context` builds the `ssl.SSLContext`, and
`create_pool` refuses (`ConfigError`) a first connection that is not encrypted.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

import aiomysql

from searchsync.errors import ConfigError, ErrorCode, TransientError

if TYPE_CHECKING:
    from searchsync.config import MysqlSettings

__all__ = [
    "create_pool",
    "db_time",
    "expand_in",
    "mysql_error_code",
    "quote_identifier",
    "tls_context",
    "transaction",
    "transaction_cursor",
    "translate_errors",
    "with_transaction",
]

T = TypeVar("T")

_ER_DEADLOCK: Final = 1213
_ER_LOCK_WAIT_TIMEOUT: Final = 1205
_ER_ACCESS_DENIED: Final = frozenset({1044, 1045})
_ER_BAD_DB: Final = 1049
# Server gone, not reachable, shutting down, too many connections, connection killed.
_ER_UNAVAILABLE: Final = frozenset({1040, 1053, 1927, 2002, 2003, 2006, 2013, 2014, 2055})

IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""A table or column name searchsync interpolates into SQL (values are always parameters)."""

_SESSION_INIT: Final = "SET SESSION tx_isolation = 'READ-COMMITTED', time_zone = '+00:00'"


async def create_pool(
    *,
    host: str,
    port: int,
    user: str,
    password: str,
    database: str,
    minsize: int = 1,
    maxsize: int = 10,
    connect_timeout: float = 5.0,
    pool_recycle: int = 3600,
    tls: ssl.SSLContext | None = None,
) -> aiomysql.Pool:
    """A connection pool with the session settings described in the module docstring.

    Connections use the plain tuple cursor by default; ask for ``conn.cursor(aiomysql.DictCursor)``
    where rows by column name are wanted. `pool_recycle` (seconds) replaces connections older than
    that, so MariaDB's ``wait_timeout`` never hands us a dead socket.

    Raises `TransientError(ErrorCode.MYSQL_UNAVAILABLE)` when the server cannot be reached and
    `ConfigError` when it refuses the credentials or does not know the database, or when `tls`
    is given and the connection is not encrypted.
    """
    if not 0 <= minsize <= maxsize or maxsize < 1:
        raise ConfigError(
            "mysql.pool", "0 <= minsize <= maxsize and maxsize >= 1", (minsize, maxsize)
        )
    where = f"{user}@{host}:{port}/{database}"
    with translate_errors(f"connect to {where}"):
        pool: aiomysql.Pool = await aiomysql.create_pool(
            host=host,
            port=port,
            user=user,
            password=password,
            db=database,
            minsize=minsize,
            maxsize=maxsize,
            connect_timeout=connect_timeout,
            pool_recycle=pool_recycle,
            autocommit=False,
            charset="utf8mb4",
            init_command=_SESSION_INIT,
            ssl=tls,
        )
    if tls is not None:
        await _require_tls(pool, where)
    return pool


def tls_context(mysql: MysqlSettings) -> ssl.SSLContext | None:
    """The TLS context of ``[mysql] ssl_mode``: None for ``disabled``; ``verify_ca`` checks the
    server's certificate against `ssl_ca` (the system store when unset), ``verify_identity``
    its host name too; `ssl_cert` and `ssl_key` are a client certificate."""
    if mysql.ssl_mode == "disabled":
        return None
    context = ssl.create_default_context(cafile=mysql.ssl_ca)
    context.check_hostname = mysql.ssl_mode == "verify_identity"
    if mysql.ssl_cert is not None:
        context.load_cert_chain(mysql.ssl_cert, mysql.ssl_key)
    return context


async def _require_tls(pool: aiomysql.Pool, where: str) -> None:
    with translate_errors(f"check TLS to {where}"):
        async with pool.acquire() as conn, conn.cursor() as cur:
            await cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            row = await cur.fetchone()
    if row is None or not row[1]:
        pool.close()
        await pool.wait_closed()
        raise ConfigError(
            "mysql.ssl_mode", "a server that speaks TLS", f"an unencrypted connection to {where}"
        )


async def open_pool(mysql: MysqlSettings, *, maxsize: int | None = None) -> aiomysql.Pool:
    """`create_pool` for the configured MySQL user: the settings' pool bounds, or `maxsize`
    connections for a command that needs only a few. Close it with `close_pool`."""
    return await create_pool(
        host=mysql.host,
        port=mysql.port,
        user=mysql.user,
        password=mysql.password.reveal(),
        database=mysql.database,
        minsize=mysql.pool_min if maxsize is None else min(1, maxsize),
        maxsize=mysql.pool_max if maxsize is None else maxsize,
        connect_timeout=mysql.connect_timeout_s,
        tls=tls_context(mysql),
    )


async def close_pool(pool: aiomysql.Pool) -> None:
    """Close `pool` and wait until its connections are gone."""
    pool.close()
    await pool.wait_closed()


@asynccontextmanager
async def pool_of(
    mysql: MysqlSettings, *, maxsize: int | None = None
) -> AsyncIterator[aiomysql.Pool]:
    """`open_pool` for the length of a ``with`` block."""
    pool = await open_pool(mysql, maxsize=maxsize)
    try:
        yield pool
    finally:
        await close_pool(pool)


@asynccontextmanager
async def transaction(pool: aiomysql.Pool) -> AsyncIterator[Any]:
    """One connection in one transaction: commit on success, roll back on error.

    A connection is closed instead of reused when the rollback fails or the body was interrupted
    by something other than an ``Exception`` (task cancellation): its protocol state is unknown,
    and the server rolls back the open transaction when the socket goes away. Driver errors are
    translated as `translate_errors` says.
    """
    with translate_errors("transaction"):
        conn = await pool.acquire()
    try:
        with translate_errors("transaction"):
            await conn.begin()
        try:
            yield conn
            with translate_errors("commit"):
                await conn.commit()
        except Exception:
            await _rollback_or_close(conn)
            raise
        except BaseException:
            conn.close()
            raise
    finally:
        await pool.release(conn)


@asynccontextmanager
async def transaction_cursor(pool: aiomysql.Pool, doing: str) -> AsyncIterator[Any]:
    """A tuple cursor on one connection in `transaction`; driver errors in the body (and in opening
    or closing the cursor) are translated as `translate_errors(doing)` says."""
    async with transaction(pool) as conn:
        with translate_errors(doing):
            async with conn.cursor() as cur:
                yield cur


async def with_transaction(pool: aiomysql.Pool, fn: Callable[[Any], Awaitable[T]]) -> T:
    """Run ``fn(conn)`` inside `transaction` and return its result."""
    async with transaction(pool) as conn:
        return await fn(conn)


async def _rollback_or_close(conn: Any) -> None:
    if conn.closed:
        return
    try:
        await conn.rollback()
    except Exception:
        conn.close()


def mysql_error_code(exc: BaseException) -> int | None:
    """The MySQL error number of a driver error, or None if `exc` is not one."""
    if isinstance(exc, aiomysql.MySQLError) and exc.args and isinstance(exc.args[0], int):
        return exc.args[0]
    return None


@contextmanager
def translate_errors(doing: str) -> Iterator[None]:
    """Re-raise driver errors as the pipeline's error tree (see the module docstring).

    `doing` names the operation in the message, e.g. ``"read wiki_page"``. Works around awaits:
    ``with translate_errors("x"): await cursor.execute(...)``.
    """
    try:
        yield
    except (aiomysql.OperationalError, aiomysql.InternalError) as exc:
        code = mysql_error_code(exc)
        if code == _ER_DEADLOCK:
            raise TransientError(ErrorCode.MYSQL_DEADLOCK, f"{doing}: {exc}") from exc
        if code == _ER_LOCK_WAIT_TIMEOUT:
            raise TransientError(ErrorCode.MYSQL_LOCK_TIMEOUT, f"{doing}: {exc}") from exc
        if code in _ER_ACCESS_DENIED:
            raise ConfigError("mysql.user/password", "credentials MySQL accepts", str(exc)) from exc
        if code == _ER_BAD_DB:
            raise ConfigError("mysql.database", "an existing database", str(exc)) from exc
        if code in _ER_UNAVAILABLE or code is None:
            raise TransientError(ErrorCode.MYSQL_UNAVAILABLE, f"{doing}: {exc}") from exc
        raise
    except aiomysql.InterfaceError as exc:  # used a connection that is already closed
        raise TransientError(ErrorCode.MYSQL_UNAVAILABLE, f"{doing}: {exc!r}") from exc
    except OSError as exc:  # includes TimeoutError (connect_timeout)
        raise TransientError(ErrorCode.MYSQL_UNAVAILABLE, f"{doing}: {exc!r}") from exc


def db_time(at: datetime) -> datetime:
    """`at` as DATETIME(6) columns hold it: naive UTC (the session time zone is UTC too)."""
    if at.tzinfo is not None:
        return at.astimezone(UTC).replace(tzinfo=None)
    return at


def quote_identifier(name: str) -> str:
    """`name` in backticks, after checking it is a plain identifier (`IDENTIFIER`): the one way a
    table or column name enters SQL text. Raises ValueError for anything else (a backtick, a dot,
    a space, a quote could not break out of the quotes, but they are refused all the same)."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ValueError(f"SQL identifier {name!r}: want {IDENTIFIER.pattern}")
    return f"`{name}`"


def expand_in(sql: str, count: int) -> str:
    """`sql` with its one ``IN %s`` turned into ``IN (%s, ..., %s)`` for `count` values.

    PyMySQL 1.2 no longer escapes a tuple as a parenthesised list, so ``cur.execute("... IN %s",
    (ids,))`` raises ``TypeError``; pass the values flat with the expanded SQL instead.
    """
    if count < 1:
        raise ValueError("an IN list needs at least one value")
    if sql.count("IN %s") != 1:
        raise ValueError(f"expected exactly one 'IN %s' in {sql!r}")
    return sql.replace("IN %s", "IN (" + ", ".join(["%s"] * count) + ")")
