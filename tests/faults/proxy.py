"""A loopback HTTP proxy in front of Elasticsearch that answers 429 to a share of `_bulk` calls.

The consumers of a fault run talk to Elasticsearch through it; `reject_share` (0..1) is the
share of `_bulk` requests answered ``429 Too Many Requests`` (an `es_rejected_execution_exception`
body, as a full write queue gives) without reaching Elasticsearch. Every other request is relayed
unchanged over one upstream connection per client connection (HTTP/1.1 keep-alive; bodies framed
by Content-Length or chunked). Which requests are refused is drawn from a seeded generator.
While `delay_s` > 0, a request that names `delay_marker` (an alias, in its line or its body) is
held that long before it is relayed: a slow Elasticsearch for one index, which widens the time a
member spends between reading the truth and writing it (the fan-out freeze).
"""

from __future__ import annotations

import asyncio
import contextlib
import random

_REJECT_BODY = (
    b'{"error":{"type":"es_rejected_execution_exception","reason":"rejected by the fault'
    b' proxy"},"status":429}'
)


class Es429Proxy:
    def __init__(self, upstream_host: str, upstream_port: int, *, seed: int) -> None:
        self._up = (upstream_host, upstream_port)
        self._rng = random.Random(seed)
        self.reject_share = 0.0
        self.rejected = 0
        self.relayed = 0
        self.delay_s = 0.0
        self.delay_marker = b""
        self.delayed = 0
        self._server: asyncio.Server | None = None
        self._conns: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):  # the handlers see the connection end and return
            w.transport.abort()
        for task in list(self._conns):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(task), 5)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        self._writers.add(writer)
        up: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        try:
            while True:
                head, body = await _read_message(reader)
                if head is None:
                    return
                if self._refuse(head):
                    self.rejected += 1
                    writer.write(
                        b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                        b"X-Elastic-Product: Elasticsearch\r\n"
                        + f"Content-Length: {len(_REJECT_BODY)}\r\n\r\n".encode()
                        + _REJECT_BODY
                    )
                    await writer.drain()
                    continue
                if self._held(head, body):
                    self.delayed += 1
                    await asyncio.sleep(self.delay_s)
                if up is None:
                    up = await asyncio.open_connection(*self._up)
                up[1].write(head + body)
                await up[1].drain()
                rhead, rbody = await _read_message(up[0], head_request=head.startswith(b"HEAD "))
                if rhead is None:
                    return
                self.relayed += 1
                writer.write(rhead + rbody)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        finally:
            self._conns.discard(task)
            self._writers.discard(writer)
            writer.close()
            if up is not None:
                up[1].close()

    def _held(self, head: bytes, body: bytes) -> bool:
        marker = self.delay_marker
        return self.delay_s > 0 and bool(marker) and (marker in head or marker in body)

    def _refuse(self, head: bytes) -> bool:
        line = head.split(b"\r\n", 1)[0]
        parts = line.split(b" ")
        is_bulk = len(parts) > 1 and parts[1].split(b"?", 1)[0].endswith(b"/_bulk")
        return is_bulk and self.reject_share > 0 and self._rng.random() < self.reject_share


async def _read_message(
    reader: asyncio.StreamReader, *, head_request: bool = False
) -> tuple[bytes | None, bytes]:
    """One HTTP message: (the head with its blank line, the body as framed), or (None, b"").
    The answer to a HEAD request, a 204 and a 304 have no body whatever their headers say."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None, b""
    headers = {}
    for raw in head.split(b"\r\n")[1:]:
        name, sep, value = raw.partition(b":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    status = head.split(b" ", 2)[1] if head.startswith(b"HTTP/") else b""
    if head_request or status in (b"204", b"304"):
        return head, b""
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        return head, await _read_chunked(reader)
    length = int(headers.get(b"content-length", b"0"))
    return head, await reader.readexactly(length) if length else b""


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size_line = await reader.readuntil(b"\r\n")
        out += size_line
        size = int(size_line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            while True:  # trailers, then the final blank line
                line = await reader.readuntil(b"\r\n")
                out += line
                if line == b"\r\n":
                    return bytes(out)
        out += await reader.readexactly(size + 2)
