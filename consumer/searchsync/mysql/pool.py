"""MySQL and MariaDB connections: the pool factory (utf8mb4, autocommit off, READ COMMITTED, UTC;
the server family detected as it connects), the one transaction scope, and the one translation of
driver errors into the pipeline's errors. READ COMMITTED: a locking read of a missing row takes no
gap lock, so two concurrent creates of one id collide on the primary key instead of deadlocking.
The family's statement texts come from `searchsync.mysql.dialect` through `dialect_of`."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final
from weakref import WeakKeyDictionary

import aiomysql

from searchsync.config import MYSQL_FLAVORS
from searchsync.errors import ConfigError, ErrorCode, TransientError
from searchsync.mysql.dialect import (
    ISOLATION,
    SERVER_PROBE,
    SNAPSHOT,
    TIME_ZONE,
    Dialect,
    flavor_of,
)
from searchsync.naming import IDENTIFIER

if TYPE_CHECKING:
    from searchsync.config import MysqlSettings

_ER_ACCESS_DENIED: Final = frozenset({1044, 1045})
_ER_BAD_DB: Final = 1049
# deadlock, lock wait timeout; server gone, not reachable, shutting down, too many connections,
# connection killed
_ER_TRANSIENT: Final = {
    1213: ErrorCode.MYSQL_DEADLOCK,
    1205: ErrorCode.MYSQL_LOCK_TIMEOUT,
    **dict.fromkeys(
        (1040, 1053, 1927, 2002, 2003, 2006, 2013, 2014, 2055), ErrorCode.MYSQL_UNAVAILABLE
    ),
}

"""A table or column name searchsync interpolates into SQL (values are always parameters)."""

# per pool: ``[mysql] flavor`` and the address (`create_pool`), then the server's dialect once
# known; per connection: its dialect once its session is set up
_POOLS: WeakKeyDictionary[aiomysql.Pool, tuple[str, str] | Dialect] = WeakKeyDictionary()
_SESSIONS: WeakKeyDictionary[Any, Dialect] = WeakKeyDictionary()


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
    tls: ssl.SSLContext | None = None,
    flavor: str = "auto",
) -> aiomysql.Pool:
    """A pool of sessions as the module docstring says (tuple cursors by default); connections
    older than an hour are replaced before the server's ``wait_timeout`` kills them. `flavor` is
    ``[mysql] flavor``: ``auto`` takes the family the server names, ``mysql`` or ``mariadb`` must
    match it. The server is asked once, here (`minsize` > 0) or before the first transaction
    (`minsize` 0: the pool connects lazily).

    Raises `TransientError(MYSQL_UNAVAILABLE)` when the server cannot be reached, `ConfigError`
    for refused credentials, an unknown database, an unencrypted connection when `tls` is set, or
    a server of another family than `flavor` (then or at the first transaction).
    """
    if flavor not in MYSQL_FLAVORS:
        raise ConfigError("mysql.flavor", " | ".join(MYSQL_FLAVORS), flavor)
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
            pool_recycle=3600,
            autocommit=False,
            charset="utf8mb4",
            init_command=TIME_ZONE,
            ssl=tls,
        )
    _POOLS[pool] = (flavor, where)
    try:
        if tls is not None:
            with translate_errors(f"check TLS to {where}"):
                async with pool.acquire() as conn, conn.cursor() as cur:
                    await cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
                    row = await cur.fetchone()
            if row is None or not row[1]:
                unencrypted = f"an unencrypted connection to {where}"
                raise ConfigError("mysql.ssl_mode", "a server that speaks TLS", unencrypted)
        if minsize > 0:  # connected already: a server of another family stops start-up here
            with translate_errors(f"connect to {where}"):
                async with pool.acquire() as conn:
                    await _pool_dialect(pool, conn)
    except BaseException:
        await close_pool(pool)
        raise
    return pool


async def _pool_dialect(pool: aiomysql.Pool, conn: Any) -> Dialect:
    """The dialect of the server behind `pool` (of `create_pool`), asked on `conn` the first
    time; ConfigError when ``[mysql] flavor`` names another family."""
    known = _POOLS.get(pool)
    if known is None:  # a pool made elsewhere: the family its handshake names
        return dialect_of(conn)
    if isinstance(known, Dialect):
        return known
    flavor, where = known
    with translate_errors(f"ask {where} its version"):
        async with conn.cursor() as cur:
            await cur.execute(SERVER_PROBE)
            version, comment = await cur.fetchone()
    found = flavor_of(str(version), None if comment is None else str(comment))
    if flavor not in ("auto", found):
        expected = f"auto or {found} (the server at {where} is {version} {comment})"
        raise ConfigError("mysql.flavor", expected, flavor)
    dialect = _POOLS[pool] = Dialect(found)
    return dialect


def dialect_of(conn: Any) -> Dialect:
    """The dialect of a connection: its pool's once its session is set up (`transaction`), else
    the family its handshake's version string names (no round trip)."""
    return _SESSIONS.get(conn) or Dialect(flavor_of(str(conn.get_server_info())))


def tls_context(mysql: MysqlSettings) -> ssl.SSLContext | None:
    """The TLS context of ``[mysql] ssl_mode`` (None for ``disabled``; ``verify_identity`` also
    checks the host name; `ssl_ca` defaults to the system store)."""
    if mysql.ssl_mode == "disabled":
        return None
    context = ssl.create_default_context(cafile=mysql.ssl_ca)
    context.check_hostname = mysql.ssl_mode == "verify_identity"
    if mysql.ssl_cert is not None:
        context.load_cert_chain(mysql.ssl_cert, mysql.ssl_key)
    return context


async def open_pool(mysql: MysqlSettings, *, maxsize: int | None = None) -> aiomysql.Pool:
    """`create_pool` for the configured user: the settings' bounds, or at most `maxsize`."""
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
        flavor=mysql.flavor,
    )


async def close_pool(pool: aiomysql.Pool) -> None:
    pool.close()
    await pool.wait_closed()


@asynccontextmanager
async def pool_of(
    mysql: MysqlSettings, *, maxsize: int | None = None
) -> AsyncIterator[aiomysql.Pool]:
    pool = await open_pool(mysql, maxsize=maxsize)
    try:
        yield pool
    finally:
        await close_pool(pool)


@asynccontextmanager
async def transaction(pool: aiomysql.Pool, *, snapshot: bool = False) -> AsyncIterator[Any]:
    """One connection in one transaction: commit on success, roll back on error. A connection
    whose state is unknown (failed rollback, cancelled body) is closed, never reused: the server
    rolls its transaction back. `snapshot`: a read-only transaction in which every statement sees
    the database as it was when it began (`dialect.SNAPSHOT`)."""
    with translate_errors("transaction"):
        conn = await pool.acquire()
    try:
        with translate_errors("transaction"):
            if conn not in _SESSIONS:  # READ COMMITTED, once per connection
                dialect = await _pool_dialect(pool, conn)
                async with conn.cursor() as cur:
                    await cur.execute(ISOLATION)
                _SESSIONS[conn] = dialect
            if snapshot:
                async with conn.cursor() as cur:
                    for statement in SNAPSHOT:
                        await cur.execute(statement)
            else:
                await conn.begin()
        try:
            yield conn
            with translate_errors("commit"):
                await conn.commit()
        except Exception:
            if not conn.closed:
                try:
                    await conn.rollback()
                except Exception:
                    conn.close()
            raise
        except BaseException:
            conn.close()
            raise
    finally:
        await pool.release(conn)


@asynccontextmanager
async def transaction_cursor(pool: aiomysql.Pool, doing: str) -> AsyncIterator[Any]:
    """A cursor (tuple rows) in one `transaction`, driver errors translated by
    `translate_errors(doing)`; ``cur.connection`` is the transaction's connection."""
    async with transaction(pool) as conn:
        with translate_errors(doing):
            async with conn.cursor() as cur:
                yield cur


async def fetch_all(pool: aiomysql.Pool, doing: str, sql: str, args: Sequence[Any] = ()) -> Any:
    """The rows (tuples) of one statement, in a `transaction_cursor` of its own."""
    async with transaction_cursor(pool, doing) as cur:
        await cur.execute(sql, args)
        return await cur.fetchall()


def mysql_error_code(exc: BaseException) -> int | None:
    driver = isinstance(exc, aiomysql.MySQLError) and exc.args and isinstance(exc.args[0], int)
    return exc.args[0] if driver else None


@contextmanager
def translate_errors(doing: str) -> Iterator[None]:
    """Re-raise driver errors that may heal (server away, deadlock, lock wait timeout) as
    `TransientError`, refused credentials or an unknown database as `ConfigError`; anything else
    (SQL bugs, constraint violations) unchanged. `doing` names the operation in the message."""
    try:
        yield
    except (aiomysql.OperationalError, aiomysql.InternalError) as exc:
        code = mysql_error_code(exc)
        if code in _ER_ACCESS_DENIED:
            raise ConfigError("mysql.user/password", "credentials MySQL accepts", str(exc)) from exc
        if code == _ER_BAD_DB:
            raise ConfigError("mysql.database", "an existing database", str(exc)) from exc
        transient = ErrorCode.MYSQL_UNAVAILABLE if code is None else _ER_TRANSIENT.get(code)
        if transient is None:
            raise
        raise TransientError(transient, f"{doing}: {exc}") from exc
    # a connection already closed; OSError includes TimeoutError (connect_timeout)
    except (aiomysql.InterfaceError, OSError) as exc:
        raise TransientError(ErrorCode.MYSQL_UNAVAILABLE, f"{doing}: {exc!r}") from exc


def db_time(at: datetime) -> datetime:
    """`at` as DATETIME(6) columns hold it: naive UTC (the session time zone is UTC too)."""
    return at if at.tzinfo is None else at.astimezone(UTC).replace(tzinfo=None)


def quote_identifier(name: str) -> str:
    """`name` in backticks: the one way a table or column name enters SQL text. ValueError unless
    it is an `IDENTIFIER`."""
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ValueError(f"SQL identifier {name!r}: want {IDENTIFIER.pattern}")
    return f"`{name}`"


def expand_in(sql: str, count: int) -> str:
    """`sql` with its one ``IN %s`` turned into ``IN (%s, ..., %s)`` for `count` flat values
    (PyMySQL 1.2 no longer expands a tuple parameter)."""
    if count < 1:
        raise ValueError("an IN list needs at least one value")
    if sql.count("IN %s") != 1:
        raise ValueError(f"expected exactly one 'IN %s' in {sql!r}")
    return sql.replace("IN %s", "IN (" + ", ".join(["%s"] * count) + ")")
