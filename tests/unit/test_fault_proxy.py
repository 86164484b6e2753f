"""The fault suite's 429 proxy (tests/faults/proxy.py) against a tiny loopback upstream: it relays
requests and answers unchanged (Content-Length, chunked, HEAD) over keep-alive connections, and
refuses exactly the `_bulk` requests its share selects."""

from __future__ import annotations

import asyncio

from tests.faults.proxy import Es429Proxy


async def _upstream() -> tuple[asyncio.Server, list[bytes]]:
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await reader.readexactly(length) if length else b""
            seen.append(head.split(b"\r\n")[0])
            if head.startswith(b"HEAD "):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n")
            elif b"/chunked" in head:
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")  # fmt: skip
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0), seen


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes, answer_len: int
) -> bytes:
    writer.write(request)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    return head + (await reader.readexactly(answer_len) if answer_len else b"")


async def test_relays_every_framing_and_refuses_bulk_by_share() -> None:
    server, seen = await _upstream()
    proxy = Es429Proxy("127.0.0.1", server.sockets[0].getsockname()[1], seed=1)
    await proxy.start()
    port = int(proxy.url.rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        bulk = b"POST /i/_bulk HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
        assert (await _exchange(reader, writer, bulk, 2)).endswith(b"\r\n\r\n{}")
        head = await _exchange(reader, writer, b"HEAD /i HTTP/1.1\r\n\r\n", 0)
        assert head.startswith(b"HTTP/1.1 200") and b"Content-Length: 7" in head
        chunked = await _exchange(reader, writer, b"GET /chunked HTTP/1.1\r\n\r\n", 20)
        assert chunked.endswith(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        proxy.reject_share = 1.0
        refused = await _exchange(reader, writer, bulk, 0)
        assert refused.startswith(b"HTTP/1.1 429")
        await reader.readexactly(int(refused.split(b"Content-Length: ")[1].split(b"\r\n")[0]))
        search = b"POST /i/_search HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
        assert (await _exchange(reader, writer, search, 2)).startswith(b"HTTP/1.1 200")
    finally:
        writer.close()
        await proxy.close()
        server.close()
    assert seen == [b"POST /i/_bulk HTTP/1.1", b"HEAD /i HTTP/1.1", b"GET /chunked HTTP/1.1",
                    b"POST /i/_search HTTP/1.1"]  # fmt: skip
    assert (proxy.rejected, proxy.relayed) == (1, 4)
