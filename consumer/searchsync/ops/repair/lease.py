"""One repair per aggregate type at a time: a lease in MySQL (``search_repair_lease``: holder and
expiry, in the database's own time), taken for every type a repair scans and renewed every third
of ``repair.lease_s`` while it runs. Two repairs of one type would double the load and interleave
the wheel's generations. A repair that cannot take a lease waits for it (`RepairLease.hold` with
`wait`: a standby daemon takes over once the holder is gone) or stops with `LeaseHeld`. A holder
that cannot renew before its lease runs out stops its work (`LeaseLost`): another may hold it."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import aiomysql

from searchsync.errors import LeaseHeld, LeaseLost
from searchsync.mysql.pool import transaction_cursor

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Holder:
    aggregate_type: str
    holder: str
    expires_at: datetime

    def describe(self) -> str:
        until = self.expires_at.isoformat(timespec="seconds")
        return f"the repair of {self.aggregate_type} is held by {self.holder} (lease until {until})"


class LeaseStore(Protocol):
    async def take(self, aggregate_type: str, holder: str, seconds: float) -> Holder | None:
        """Take or renew the lease for `seconds` from now; None when taken, else who holds it."""

    async def release(self, aggregate_type: str, holder: str) -> None:
        """End `holder`'s lease now (nothing when another holds it)."""


class MysqlLeaseStore:
    def __init__(self, pool: aiomysql.Pool) -> None:
        self._pool = pool

    async def take(self, aggregate_type: str, holder: str, seconds: float) -> Holder | None:
        async with transaction_cursor(self._pool, "taking the repair lease") as cur:
            await cur.execute(
                "INSERT INTO search_repair_lease (aggregate_type, holder, acquired_at,"
                " expires_at) VALUES (%s, '', NOW(6), '1970-01-01 00:00:01')"
                " ON DUPLICATE KEY UPDATE aggregate_type = aggregate_type",
                (aggregate_type,),
            )
            await cur.execute(
                "SELECT holder, expires_at, expires_at <= NOW(6) FROM search_repair_lease"
                " WHERE aggregate_type = %s FOR UPDATE",
                (aggregate_type,),
            )
            current, expires_at, expired = await cur.fetchone()
            if current != holder and not expired:
                return Holder(aggregate_type, str(current), expires_at.replace(tzinfo=UTC))
            await cur.execute(
                "UPDATE search_repair_lease SET acquired_at = IF(holder = %s, acquired_at,"
                " NOW(6)), holder = %s, expires_at = NOW(6) + INTERVAL %s MICROSECOND"
                " WHERE aggregate_type = %s",
                (holder, holder, int(seconds * 1_000_000), aggregate_type),
            )
            return None

    async def release(self, aggregate_type: str, holder: str) -> None:
        async with transaction_cursor(self._pool, "releasing the repair lease") as cur:
            await cur.execute(
                "UPDATE search_repair_lease SET expires_at = NOW(6)"
                " WHERE aggregate_type = %s AND holder = %s",
                (aggregate_type, holder),
            )


def holder_name() -> str:
    """This process, as the lease shows it: ``user@host pid N (token)``."""
    return f"{getpass.getuser()}@{socket.gethostname()} pid {os.getpid()} ({uuid.uuid4().hex[:8]})"


@dataclass(slots=True)
class RepairLease:
    """The leases of one repair process; `seconds`: how long each lasts unless renewed; `holder`:
    this process, as the lease shows it (by default ``user@host pid N (token)``)."""

    _store: LeaseStore
    seconds: float
    _: KW_ONLY
    holder: str = field(default_factory=holder_name)
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def _take_all(self, types: Sequence[str]) -> list[Holder]:
        takes = [await self._store.take(t, self.holder, self.seconds) for t in sorted(types)]
        return [h for h in takes if h is not None]

    async def acquire(
        self, types: Sequence[str], *, wait: bool, on_wait: Callable[[str], None] | None = None
    ) -> None:
        """Take every type's lease; `LeaseHeld` when one is held and not `wait`, else try again
        every third of the lease (saying once why it waits)."""
        while held := await self._take_all(types):
            if not wait:
                await self.release(types)
                raise LeaseHeld(held)
            if on_wait is not None:
                on_wait("; ".join(h.describe() for h in held) + ": waiting for it")
                on_wait = None  # said once
            await self.sleep(self.seconds / 3)

    async def release(self, types: Sequence[str]) -> None:
        for t in sorted(types):
            with contextlib.suppress(Exception):
                await self._store.release(t, self.holder)

    @contextlib.asynccontextmanager
    async def hold(
        self, types: Sequence[str], *, wait: bool, on_wait: Callable[[str], None] | None = None
    ) -> AsyncIterator[None]:
        """The leases of `types` for the body, renewed while it runs; the body is cancelled and
        `LeaseLost` raised when they cannot be renewed in time; released at the end."""
        await self.acquire(types, wait=wait, on_wait=on_wait)
        body = asyncio.current_task()
        lost: list[str] = []
        renewer = asyncio.create_task(self._renew(types, body, lost))
        try:
            yield
        except asyncio.CancelledError:
            if lost and body is not None:
                body.uncancel()  # the renewer's cancel, not the caller's: say why instead
                raise LeaseLost(lost[0]) from None
            raise
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await self.release(types)

    async def _renew(
        self, types: Sequence[str], body: asyncio.Task[object] | None, lost: list[str]
    ) -> None:
        valid_until = self.clock() + self.seconds
        while True:
            await self.sleep(self.seconds / 3)
            try:
                held = await self._take_all(types)
            except Exception as exc:  # the lease still runs: try again until it would end
                log.warning("renewing the repair lease failed", extra={"error": str(exc)})
                if self.clock() < valid_until:
                    continue
                held, why = [], f"could not renew the repair lease before it ran out: {exc}"
            else:
                why = "; ".join(h.describe() for h in held)
                if not held:
                    valid_until = self.clock() + self.seconds
                    continue
            lost.append(f"lost the repair lease: {why}; this repair stopped")
            log.error(lost[0])
            if body is not None:
                body.cancel()
            return
