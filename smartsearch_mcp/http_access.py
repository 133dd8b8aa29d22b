"""Who may talk to the HTTP server: the bind rule, the bearer token, trusted Host and Origin
values (against DNS rebinding), and the request size limit.

Pure rules and one ASGI middleware; `server.http_app` applies them to the MCP app.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import secrets
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
    """The access rules of one HTTP server. `token_generated`: no token was given, so one
    was made for this run (the caller tells the user how to send it)."""

    host: str
    token: str | None
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]
    max_request_bytes: int
    token_generated: bool = False


def is_loopback(host: str) -> bool:
    """True when `host` is reachable only from this machine (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """True when `host` binds every interface of this machine."""
    return host in _WILDCARDS


def check_token(token: str) -> str:
    """`token` when it can serve as a bearer token; a ConfigError saying why not otherwise."""
    if not token.strip():
        raise ConfigError(f"the bearer token is blank; make a strong one with: {_MAKE_TOKEN}")
    if any(not ("!" <= ch <= "~") for ch in token):
        raise ConfigError(
            "the bearer token holds spaces, control or non-ASCII characters, which an "
            f"Authorization header cannot carry; make one with: {_MAKE_TOKEN}"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"the bearer token is shorter than {MIN_TOKEN_CHARS} characters; make a strong "
            f"one with: {_MAKE_TOKEN}"
        )
    return token


def http_access(
    host: str,
    token: str | None,
    *,
    insecure: bool = False,
    extra_hosts: Sequence[str] = (),
    max_request_mb: int = DEFAULT_MAX_REQUEST_MB,
) -> HttpAccess:
    """The rules for serving on `host`. A token is always required unless `insecure` is
    given explicitly: on loopback, where any local user or process could otherwise read and
    delete the memories, one is generated for this run when none is given; beyond loopback
    a ConfigError says what to do."""
    token = check_token(token) if token else None
    generated = False
    if token is None and not insecure:
        if not is_loopback(host):
            raise ConfigError(
                f"refusing to serve HTTP on {host} without a bearer token: anyone who can reach "
                f"the port could read and delete these memories. Set ${TOKEN_ENV} (or --token; "
                f"make one with: {_MAKE_TOKEN}), bind 127.0.0.1, or pass --insecure if every "
                "client on this network is trusted"
            )
        token, generated = secrets.token_urlsafe(32), True
    if token is None:
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
        token_generated=generated,
    )


def start_notices(access: HttpAccess, port: int) -> list[str]:
    """What a user must know when the server starts: how to send a generated token, and,
    bound to every interface, which Host names clients may use."""
    notices = []
    if access.token_generated:
        notices.append(
            f"no bearer token given, so this run made one; clients send the header "
            f"'Authorization: Bearer {access.token}' (set ${TOKEN_ENV} to keep one token "
            "across restarts, or pass --insecure to let every local user in without one)"
        )
    if is_wildcard(access.host):
        names = ", ".join(h for h in access.allowed_hosts if not h.endswith(":*"))
        notices.append(
            f"bound to every interface: clients must reach it as one of {names} (any port "
            f"{port}); any other name or address, this machine's IP included, gets 421 "
            "Misdirected Request unless given with --allowed-host NAME"
        )
    return notices


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


class AccessMiddleware:
    """Every HTTP request: Host and Origin lowercased (host names are case-insensitive, and
    the DNS-rebinding check after this compares them exactly), then, when a token is set,
    401 to any request without `Authorization: Bearer <token>` (the scheme in any case, the
    token compared in constant time; the 401 closes the connection). Lifespan and other
    non-HTTP messages pass through."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self._expected = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = [
            (name, value.lower() if name in (b"host", b"origin") else value)
            for name, value in scope.get("headers", [])
        ]
        scope = {**scope, "headers": headers}
        if self._expected is None or self._authorized(headers):
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
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        assert self._expected is not None
        given = next((value for name, value in headers if name == b"authorization"), b"")
        scheme, _, credentials = given.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(
            credentials.strip(b" "), self._expected
        )
