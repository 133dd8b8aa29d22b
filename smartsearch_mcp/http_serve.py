"""How the HTTP server runs: its listening sockets, bound before anything else opens (a port
in use is one clear error, not a traceback after "serving at"), and a uvicorn protocol that
holds up against slow or idle clients.

uvicorn has a keep-alive timeout but no timeout for the request line and headers, none for a
stalled body, and no cap on open connections: a few hundred sockets that never finish their
headers stay open forever, and the bearer token is only checked once headers are complete.
`guarded_protocol` adds all three to uvicorn's h11 protocol:

- header timeout: a request's line and headers must be complete within `header_timeout`
  seconds of its first byte (of the connection, for its first request); then 408 and close.
- body timeout: while a request body is arriving, each pause between chunks is at most
  `body_timeout` seconds; then the connection closes (the app sees a disconnect).
- connection cap: beyond `max_connections` open connections, the one that has waited longest
  for its headers is closed (503) to make room; when every connection is serving a request, the
  new one gets 503 instead. Stalled connections thus never lock out a client that sends its
  request promptly, and the process never runs out of file descriptors.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from smartsearch_mcp.types import SmartSearchError

log = logging.getLogger(__name__)

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_KEEP_ALIVE_TIMEOUT = 5.0
DEFAULT_MAX_CONNECTIONS = 256
_RESERVED_FILES = 64  # kept free for the database, models and logs
_WARN_EVERY_SECONDS = 60.0
_REQUEST_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-type: text/plain\r\n"
    b"content-length: 34\r\n\r\ntoo many open connections, retry.\n"
)


class ServeError(SmartSearchError):
    """The HTTP server cannot start (port in use, address not of this machine)."""


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Timeouts (seconds) and the connection cap of one HTTP server."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # On SIGTERM/SIGINT, requests still running (an open event stream, a stalled body) are
    # cancelled after this long instead of holding the exit.
    shutdown_timeout: float = 5.0


def http_limits(
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    body_timeout: float = DEFAULT_BODY_TIMEOUT,
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT,
    max_connections: int | None = None,
) -> HttpLimits:
    """Checked limits; `max_connections` defaults to 256, fewer when the process may open
    fewer files."""
    for name, value in (
        ("--header-timeout", header_timeout),
        ("--body-timeout", body_timeout),
        ("--keep-alive-timeout", keep_alive_timeout),
    ):
        if not value > 0:
            raise ServeError(f"{name} must be a positive number of seconds, not {value}")
    files = _open_file_limit()
    if max_connections is None:
        max_connections = DEFAULT_MAX_CONNECTIONS
        if files is not None:
            max_connections = max(1, min(max_connections, files - _RESERVED_FILES))
    elif max_connections < 1:
        raise ServeError("--max-connections must be at least 1")
    elif files is not None and max_connections > files - _RESERVED_FILES:
        raise ServeError(
            f"--max-connections {max_connections} does not fit this process's limit of "
            f"{files} open files (ulimit -n); give at most {files - _RESERVED_FILES}, or "
            "raise the limit"
        )
    return HttpLimits(header_timeout, body_timeout, keep_alive_timeout, max_connections)


def _open_file_limit() -> int | None:
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def bind_sockets(host: str, port: int, backlog: int = 2048) -> list[socket.socket]:
    """Listening sockets for `host`:`port` (every address the name resolves to), bound now;
    a ServeError saying what to do when the port is taken or the address is not ours."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise ServeError(
            f"cannot serve on --host {host}: {exc.strerror}; give a name or address of this "
            "machine (127.0.0.1 for this machine only, 0.0.0.0 for every interface)"
        ) from exc
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            if os.name == "posix":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError as exc:
        for sock in sockets:
            sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {host} is already in use (another `serve --http`?); stop "
                "that server or choose another port with --port"
            ) from exc
        raise ServeError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from exc
    return sockets


def guarded_protocol(limits: HttpLimits) -> type[H11Protocol]:
    """uvicorn's h11 protocol with `limits`' header and body timeouts and connection cap
    (pass it as `uvicorn.Config(http=...)`)."""
    return type("GuardedH11Protocol", (_GuardedH11Protocol,), {"limits": limits, "awaiting": {}})


class _GuardedH11Protocol(H11Protocol):
    limits: ClassVar[HttpLimits]
    # Connections waiting for a request's headers, oldest first (one dict per server).
    awaiting: ClassVar[dict[_GuardedH11Protocol, None]]
    _last_busy_warning: ClassVar[float] = float("-inf")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._waiting_for: str | None = None  # "headers" | "body" | None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        open_now = sum(1 for c in self.connections if not c.transport.is_closing())
        if open_now > self.limits.max_connections:
            if not self.awaiting:
                self._warn_busy()
                transport.write(_BUSY)
                transport.close()
                return
            # Make room by closing the connection that has waited longest for its headers:
            # a client that sends its request promptly is never that one for long, so
            # stalled connections cannot crowd it out.
            next(iter(self.awaiting))._close(_BUSY)
        self._expect("headers", self.limits.header_timeout)

    def data_received(self, data: bytes) -> None:
        if self._waiting_for is None and self.conn.their_state is h11.IDLE:
            self._expect("headers", self.limits.header_timeout)  # next request, kept alive
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._expect("body", self.limits.body_timeout)  # again after every chunk
        elif state is not h11.IDLE:
            self._stop_waiting()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _expect(self, what: str, seconds: float) -> None:
        if what == "headers" and self._waiting_for == "headers":
            return  # the deadline runs from the request's first byte, not the last
        self._stop_waiting()
        self._waiting_for = what
        self._deadline = self.loop.call_later(seconds, self._expired)
        if what == "headers":
            self.awaiting[self] = None

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self._waiting_for = None, None
        self.awaiting.pop(self, None)

    def _expired(self) -> None:
        what = self._waiting_for
        self._stop_waiting()
        if self.transport.is_closing():
            return
        if what == "body" and self.flow.read_paused:
            # Reading is paused because the app has not taken the body yet: not the client.
            self._expect("body", self.limits.body_timeout)
            return
        log.debug("closing a connection that did not send its %s in time", what)
        self._close(_REQUEST_TIMEOUT if what == "headers" else None)

    def _close(self, answer: bytes | None) -> None:
        """Close this connection, first sending `answer` when no response has started."""
        self._stop_waiting()
        if answer is not None and self.conn.our_state is h11.IDLE:
            self.transport.write(answer)
        self.transport.close()

    @classmethod
    def _warn_busy(cls) -> None:
        now = time.monotonic()
        if now - cls._last_busy_warning >= _WARN_EVERY_SECONDS:
            cls._last_busy_warning = now
            log.warning(
                "refusing a connection: all %d (--max-connections) are serving requests (503)",
                cls.limits.max_connections,
            )


def serve_on_sockets(
    app: Any, host: str, port: int, limits: HttpLimits, sockets: list[socket.socket], log_level: str
) -> None:
    """Run uvicorn with the guarded protocol on the `sockets` already bound to `host`:`port`
    until it stops (Ctrl-C); the sockets are closed afterwards."""
    import functools

    import anyio
    import uvicorn

    settings = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=guarded_protocol(limits),
        ws="none",
        timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
        timeout_graceful_shutdown=limits.shutdown_timeout,  # type: ignore[arg-type]
        log_config=None,  # uvicorn logs through our stderr handler, access logs included
        log_level=log_level,
    )
    try:
        anyio.run(functools.partial(uvicorn.Server(settings).serve, sockets=sockets))
    finally:
        for sock in sockets:
            sock.close()
