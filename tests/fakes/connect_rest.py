"""Kafka Connect's REST API on a local port (`FakeConnectRest`): each request is recorded as
``"METHOD /path"`` and answered by `answer`; dropped without an answer while `down`, and left
unanswered until the fake closes while `hang`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType

from aiohttp import web
from searchsync.config import ConnectSettings

Answer = Callable[[str, str], tuple[int, bytes]]
"""``(method, path) -> (HTTP status, body)``."""


class FakeConnectRest:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.down = False  # close each connection without an answer
        self.hang = False  # answer nothing until closed
        self.requests: list[str] = []
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()
        self.url = ""

    @property
    def settings(self) -> ConnectSettings:
        """``[connect]`` pointed at this fake."""
        return ConnectSettings(url=self.url)

    async def __aenter__(self) -> FakeConnectRest:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        if self.down:
            assert request.transport is not None
            request.transport.close()  # the client sees the connection end, no answer
            return web.Response()
        self.requests.append(f"{request.method} {request.raw_path}")
        if self.hang:
            await self._closing.wait()
        status, body = self.answer(request.method, request.raw_path)
        return web.Response(status=status, body=body, content_type="application/json")
