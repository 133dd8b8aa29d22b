"""The stdio transport: the MCP SDK's, with every line answered and stdin that lets go.

The SDK's stdio server sends no reply to a line it cannot parse (a lone UTF-16 surrogate
escape such as a JS client's string cut mid-emoji, nesting past its parser's limit,
truncated JSON): the client waits forever. It decodes invalid UTF-8 as U+FFFD, so damaged
text would be stored as if it were what the user said. And it reads stdin in a worker
thread that cancellation must wait for, so Ctrl-C at a terminal does nothing (upstream
python-sdk#3551). Here stdin is read by a daemon thread that hands lines to the event loop;
each line is checked before the SDK sees it, and one that is not a valid JSON-RPC message
gets an error reply (-32700 Parse error or -32600 Invalid request) with the request's id
when it can be read, else null. Like the SDK, fd 0 and fd 1 point at the null device and
stderr while serving, so stray reads and prints miss the wire.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from pydantic import ValidationError

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
READ_CHUNK = 1 << 16
# After stdin closes or Ctrl-C, requests still running get this long before the process ends.
GRACE_SECONDS = 3.0
# A \u escape of a UTF-16 surrogate: valid JSON only as a high + low pair.
_LONE_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


async def run_stdio(server: MCPServer[Any], grace_seconds: float = GRACE_SECONDS) -> int:
    """Serve one client over stdin/stdout until stdin closes (exit status 0) or SIGINT
    (130). Either way the server stops at once: requests still running get `grace_seconds`
    (a recall may be waiting for a model to load), then the process ends without them."""
    interrupted = False
    async with anyio.create_task_group() as group:

        async def stop_on_sigint() -> None:
            nonlocal interrupted
            with anyio.open_signal_receiver(signal.SIGINT) as signals:
                async for _ in signals:
                    if interrupted:  # a second Ctrl-C: no grace
                        _exit_now(130)
                    interrupted = True
                    log.warning("interrupted: stopping")
                    _exit_later(grace_seconds, 130)
                    group.cancel_scope.cancel()

        group.start_soon(stop_on_sigint)
        # The SDK runs stdio only on its own transport; its low-level server takes any streams.
        lowlevel = server._lowlevel_server
        async with checked_stdio(on_eof=lambda: _exit_later(grace_seconds, 0)) as streams:
            await lowlevel.run(*streams, lowlevel.create_initialization_options())
        group.cancel_scope.cancel()
    return 130 if interrupted else 0


def _exit_later(seconds: float, status: int) -> None:
    """End the process after `seconds` unless it ended by then (a daemon thread)."""

    def wait_then_exit() -> None:
        time.sleep(seconds)
        log.warning("requests still running after %.0f s; exiting without them", seconds)
        _exit_now(status)

    threading.Thread(target=wait_then_exit, name="stop-deadline", daemon=True).start()


def _exit_now(status: int) -> None:
    """End the process at once. Whatever was acknowledged is on disk (SQLite commits are
    durable); a transaction still open is rolled back by SQLite at the next open."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    for handler in logging.getLogger().handlers:
        with suppress(Exception):
            handler.flush()
    os._exit(status)


@asynccontextmanager
async def checked_stdio(
    on_eof: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) for `Server.run`, over this process's stdin and stdout;
    `on_eof` is called when stdin ends."""
    with _claimed_stdio() as (wire_in, wire_out):
        writer = _WireWriter(wire_out)
        lines = _CheckedLines(wire_in, writer, on_eof)
        async with stdio_server(stdin=cast(Any, lines), stdout=cast(Any, writer)) as streams:
            yield streams


@contextmanager
def _claimed_stdio() -> Iterator[tuple[int, int]]:
    """Private copies of fd 0 and fd 1 for the wire; fd 0 reads the null device and fd 1
    goes to stderr meanwhile. Restored on exit."""
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        os.close(null)
        with suppress(OSError):
            os.dup2(wire_out, 1)
        with suppress(OSError):
            os.dup2(wire_in, 0)
        os.close(wire_out)
        # wire_in stays open: the reader thread may still block on it until the process
        # ends, and a closed descriptor could be reused under it.


class _WireWriter:
    """What the SDK writes (whole lines, then flush) and the error replies, in order."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: list[str] = []
        self._lock = anyio.Lock()

    async def write(self, text: str) -> None:
        self._pending.append(text)

    async def flush(self) -> None:
        async with self._lock:
            data = "".join(self._pending).encode("utf-8")
            self._pending.clear()
            if data:
                await anyio.to_thread.run_sync(_write_all, self._fd, data)

    async def reply_error(self, request_id: Any, code: int, message: str) -> None:
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        await self.write(json.dumps(error) + "\n")
        await self.flush()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class _CheckedLines:
    """The valid JSON-RPC lines of stdin, as text; the others are answered with an error."""

    def __init__(
        self, fd: int, writer: _WireWriter, on_eof: Callable[[], None] | None = None
    ) -> None:
        self._fd = fd
        self._writer = writer
        self._on_eof = on_eof

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        send, receive = anyio.create_memory_object_stream[bytes](8)
        token = anyio.lowlevel.current_token()
        threading.Thread(
            target=_read_chunks, args=(self._fd, send, token), name="stdin-reader", daemon=True
        ).start()
        parts: list[bytes] = []
        async with receive:
            async for chunk in receive:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    parts.append(chunk[start:end])
                    line = await self._check(b"".join(parts))
                    parts.clear()
                    if line is not None:
                        yield line
                    start = end + 1
                if start < len(chunk):
                    parts.append(chunk[start:])
        if parts:  # the last line, without its newline
            line = await self._check(b"".join(parts))
            if line is not None:
                yield line
        if self._on_eof is not None:
            self._on_eof()

    async def _check(self, raw: bytes) -> str | None:
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            return None
        problem = check_line(raw)
        if problem is None:
            return raw.decode("utf-8")
        request_id, code, message = problem
        log.warning("answered an unreadable message with error %d: %s", code, message)
        await self._writer.reply_error(request_id, code, message)
        return None


def _read_chunks(fd: int, send: MemoryObjectSendStream[bytes], token: Any) -> None:
    """Read `fd` until EOF, handing chunks to the event loop. A daemon thread: one blocked
    on a read that never returns does not keep the process alive."""
    try:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError as exc:
                log.warning("reading stdin failed: %s", exc)
                chunk = b""
            if not chunk:
                break
            anyio.from_thread.run(send.send, chunk, token=token)
    except (
        RuntimeError,
        anyio.ClosedResourceError,
        anyio.BrokenResourceError,
        # the loop was cancelled (Ctrl-C) while it was taking a chunk
        concurrent.futures.CancelledError,
    ):
        return  # the server is gone
    with suppress(RuntimeError):
        anyio.from_thread.run_sync(send.close, token=token)


def check_line(raw: bytes) -> tuple[Any, int, str] | None:
    """None when `raw` is a JSON-RPC message the SDK accepts, else (id to answer, error code,
    message). The id is the request's when it can be read, else None."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            _readable_id(raw.decode("utf-8", "replace")),
            PARSE_ERROR,
            f"Parse error: the message is not valid UTF-8 (byte {exc.start}); nothing was "
            "done — send UTF-8 text",
        )
    try:
        types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        return None
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    kind = errors[0]["type"] if errors else ""
    if kind == "json_invalid":
        detail = errors[0]["msg"]
        if "surrogate" in detail or (_LONE_SURROGATE.search(text) and _readable(text)):
            reason = (
                "a \\u escape is a lone UTF-16 surrogate (a character cut in half); send "
                "whole characters"
            )
        elif "recursion" in detail:
            reason = "it is nested too deeply; flatten it"
        else:
            reason = f"it is not valid JSON ({detail})"
        return _readable_id(text), PARSE_ERROR, f"Parse error: {reason}; nothing was done"
    return (
        _readable_id(text),
        INVALID_REQUEST,
        'Invalid request: not a JSON-RPC 2.0 message (needs jsonrpc "2.0" and a method, or '
        "a result or error with an id); nothing was done",
    )


def _readable(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _readable_id(text: str) -> Any:
    """The message's id when a lenient parse can read one (so the client's waiting request
    gets its answer), else None."""
    try:
        message = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict):
        request_id = message.get("id")
        if isinstance(request_id, str) or (
            isinstance(request_id, int) and not isinstance(request_id, bool)
        ):
            return request_id
    return None
