"""Slow and idle HTTP clients against a real token-protected server on loopback: requests
whose headers never finish, headers trickled a byte at a time, stalled bodies, and more
connections than the cap. Timeouts are short here; the bounds the tests wait are long."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from anyio.abc import SocketStream
from servers import INITIALIZE, http_server, write_lexical_config

TOKEN = "t0k3n-for-tests-only-1234567890"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
HALF_OPEN = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


async def half_open(port: int, count: int) -> list[SocketStream]:
    """`count` connections that start a request and never finish its headers."""
    streams = []
    for _ in range(count):
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.send(HALF_OPEN)
        streams.append(stream)
    return streams


async def read_until_closed(stream: SocketStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    try:
        while True:
            received += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionResetError):
        return received


async def initialize(base: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http:
        return await http.post("/mcp", json=INITIALIZE)


async def test_half_open_requests_leave_the_server_to_clients_with_the_token_and_are_closed(
    tmp_path: Path,
) -> None:
    config = write_lexical_config(tmp_path)
    args = ("--token", TOKEN, "--header-timeout", "3")
    async with http_server(tmp_path / "m.db", config, *args) as (base, _):
        port = port_of(base)
        with anyio.fail_after(60):
            stalled = await half_open(port, 200)
        trickler = await anyio.connect_tcp("127.0.0.1", port)

        async def trickle() -> None:  # headers a byte at a time, never finished
            with pytest.raises((anyio.BrokenResourceError, ConnectionError)):
                for byte in HALF_OPEN * 100:
                    await trickler.send(bytes([byte]))
                    await anyio.sleep(0.2)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(trickle)
            with anyio.fail_after(30):
                served = await initialize(base)
            assert served.status_code == 200, served.text

            with anyio.fail_after(90):  # the header timeout is 3 s
                answers = [await read_until_closed(stream) for stream in stalled]
                await read_until_closed(trickler)
        assert all(a.startswith(b"HTTP/1.1 408 Request Timeout") for a in answers), answers[0]
        for stream in [*stalled, trickler]:
            await stream.aclose()


async def test_at_the_connection_cap_stalled_connections_make_room_oldest_first(
    tmp_path: Path,
) -> None:
    config = write_lexical_config(tmp_path)
    # A header timeout far beyond the test: only the cap's eviction can free connections.
    args = ("--token", TOKEN, "--header-timeout", "600", "--max-connections", "50")
    async with http_server(tmp_path / "m.db", config, *args) as (base, _):
        with anyio.fail_after(60):
            stalled = await half_open(port_of(base), 300)
        with anyio.fail_after(30):
            served = await initialize(base)
        assert served.status_code == 200, served.text
        with anyio.fail_after(60):  # 250 made room for later ones, 1 for the client
            evicted = [await read_until_closed(stream) for stream in stalled[:251]]
        assert all(e.startswith(b"HTTP/1.1 503 Service Unavailable") for e in evicted)
        for stream in stalled:
            await stream.aclose()


async def test_when_every_connection_is_serving_a_request_a_new_one_gets_503(
    tmp_path: Path,
) -> None:
    config = write_lexical_config(tmp_path)
    args = ("--token", TOKEN, "--max-connections", "5", "--body-timeout", "600")
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
        b"Expect: 100-continue\r\n" + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
    )
    async with http_server(tmp_path / "m.db", config, *args) as (base, _):
        port = port_of(base)
        with anyio.fail_after(60):
            busy = []
            for _ in range(5):  # requests with the token, their bodies still coming
                stream = await anyio.connect_tcp("127.0.0.1", port)
                await stream.send(head)
                # 100 Continue: the server has the headers and waits for the body.
                assert (await stream.receive()).startswith(b"HTTP/1.1 100")
                await stream.send(b'{"jsonrpc": ')
                busy.append(stream)
            one_too_many = await anyio.connect_tcp("127.0.0.1", port)
            refused = await read_until_closed(one_too_many)
        assert refused.startswith(b"HTTP/1.1 503 Service Unavailable"), refused

        await busy[0].aclose()
        with anyio.fail_after(60):  # a closed connection frees its place
            while True:
                try:
                    served = await initialize(base)
                except httpx.TransportError:
                    served = None
                if served is not None and served.status_code != 503:
                    break
                await anyio.sleep(0.2)
        assert served.status_code == 200, served.text
        for stream in [*busy[1:], one_too_many]:
            await stream.aclose()


async def test_a_stalled_body_is_dropped_and_a_request_without_the_token_is_closed_at_once(
    tmp_path: Path,
) -> None:
    config = write_lexical_config(tmp_path)
    args = ("--token", TOKEN, "--body-timeout", "2")
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
    )
    async with http_server(tmp_path / "m.db", config, *args) as (base, _):
        port = port_of(base)
        with anyio.fail_after(60):
            anonymous = await anyio.connect_tcp("127.0.0.1", port)
            await anonymous.send(head + b"\r\n" + b'{"jsonrpc": ')
            refused = await read_until_closed(anonymous)
        assert refused.startswith(b"HTTP/1.1 401"), refused

        with anyio.fail_after(90):  # the body timeout is 2 s
            stalled = await anyio.connect_tcp("127.0.0.1", port)
            await stalled.send(head + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode())
            await stalled.send(b'{"jsonrpc": ')
            await read_until_closed(stalled)

        with anyio.fail_after(30):
            served = await initialize(base)
        assert served.status_code == 200, served.text
        for stream in (anonymous, stalled):
            await stream.aclose()


async def test_a_stopped_server_exits_even_while_a_request_body_is_stalled(tmp_path: Path) -> None:
    config = write_lexical_config(tmp_path)
    args = ("--token", TOKEN, "--body-timeout", "600")
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
        b"Expect: 100-continue\r\n" + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
    )
    async with http_server(tmp_path / "m.db", config, *args) as (base, process):
        with anyio.fail_after(60):
            stalled = await anyio.connect_tcp("127.0.0.1", port_of(base))
            await stalled.send(head)
            assert (await stalled.receive()).startswith(b"HTTP/1.1 100")
            await stalled.send(b'{"jsonrpc": ')
        process.terminate()
        with anyio.fail_after(60):  # the graceful shutdown gives up on it after 5 s
            while process.poll() is None:
                await anyio.sleep(0.2)
        await stalled.aclose()
