"""Who may talk to the HTTP server: the bind rule, the bearer token, trusted Host and Origin
values (against DNS rebinding), and the request size limit.

Pure rules and one ASGI middleware; `server.http_app` applies them to the MCP app.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import socket
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from smartsearch_mcp.types import ConfigError

log = logging.getLogger(__name__)

TOKEN_ENV = "SMARTSEARCH_TOKEN"
MIN_TOKEN_CHARS = 16
DEFAULT_MAX_REQUEST_MB = 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_WILDCARDS = ("0.0.0.0", "::", "")
_MAKE_TOKEN = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True)
class HttpAccess:
    """The access rules of one HTTP server."""

    host: str
    token: str | None
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    max_request_bytes: int


def is_loopback(host: str) -> bool:
    """True when `host` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def http_access(
    host: str,
    token: str | None,
    *,
    insecure: bool = False,
    extra_hosts: Sequence[str] = (),
    max_request_mb: int = DEFAULT_MAX_REQUEST_MB,
) -> HttpAccess:
    """The rules for serving on `host`. Binding beyond loopback needs a token unless
    `insecure` is given explicitly; a ConfigError says what to do otherwise."""
    token = token or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the bearer token is shorter than {MIN_TOKEN_CHARS} characters; make a strong "
            f"one with: {_MAKE_TOKEN}"
        )
    if not is_loopback(host) and token is None:
        if not insecure:
            raise ConfigError(
                f"refusing to serve HTTP on {host} without a bearer token: anyone who can reach "
                f"the port could read and delete these memories. Set ${TOKEN_ENV} (or --token; "
                f"make one with: {_MAKE_TOKEN}), bind 127.0.0.1, or pass --insecure if every "
                "client on this network is trusted"
            )
        log.warning("serving HTTP on %s with no bearer token (--insecure)", host)
    if max_request_mb < 1:
        raise ConfigError("--max-request-mb must be at least 1")
    hosts = trusted_hosts(host, extra_hosts)
    return HttpAccess(
        host=host,
        token=token,
        allowed_hosts=tuple(p for h in hosts for p in (h, f"{h}:*")),
        allowed_origins=tuple(
            f"{scheme}://{h}{port}"
            for h in hosts
            for scheme in ("http", "https")
            for port in ("", ":*")
        ),
        max_request_bytes=max_request_mb * 1024 * 1024,
    )


def trusted_hosts(host: str, extra_hosts: Sequence[str] = ()) -> list[str]:
    """Host names a client may put in the Host header: loopback names, the bound address
    (or, bound to every interface, this machine's names) and any given explicitly."""
    names = [*LOOPBACK_NAMES]
    if host in _WILDCARDS:
        names += [socket.gethostname(), socket.getfqdn()]
    else:
        names.append(host)
    names += [h.strip() for h in extra_hosts if h.strip()]
    unique = dict.fromkeys(n.lower() for n in names)
    return [f"[{n}]" if ":" in n and not n.startswith("[") else n for n in unique]


class BearerTokenMiddleware:
    """Answer 401 to any HTTP request without `Authorization: Bearer <token>` (compared in
    constant time); lifespan and other non-HTTP messages pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                given = value
                break
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "unauthorized", "detail": "send the header Authorization: Bearer <token>"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="smartsearch-mcp"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
