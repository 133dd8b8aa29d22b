"""Who may use the memory browser: the run's token on every request, trusted Host and
Origin values (against DNS rebinding), a CSRF check on every state-changing request, and
the security headers of every response.

The token reaches the browser as Jupyter's does: in the URL the command prints. The first
request carrying it (`?token=…`) gets it back as an HttpOnly, SameSite=Strict cookie and is
redirected to the same URL without it, so the token leaves the address bar and the history.
Later requests send the cookie; scripts and tests may send the `X-SmartSearch-Token` header
instead. A request that changes something (POST) needs the header as well — a page of
another site cannot set it — and an Origin (or `Sec-Fetch-Site`) of this page.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from smartsearch_mcp.http_access import check_token, trusted_hosts

log = logging.getLogger(__name__)

TOKEN_HEADER = "x-smartsearch-token"
TOKEN_PARAM = "token"
SAFE_METHODS = frozenset({"GET", "HEAD"})

# No inline script or style, nothing from elsewhere: memory text is hostile input, and even
# markup that escaped escaping could run nothing.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


@dataclass(frozen=True)
class UiAccess:
    """The access rules of one browser run: its token, the Host values and Origins that
    name it, and the cookie that carries the token (named after the port: cookies are
    shared between the ports of a host)."""

    token: str
    port: int
    allowed_hosts: tuple[str, ...]
    allowed_origins: tuple[str, ...]

    @property
    def cookie(self) -> str:
        return f"smartsearch-ui-{self.port}"

    def url(self, host: str = "127.0.0.1", path: str = "/") -> str:
        """The URL to open: it carries the token."""
        return f"http://{host}:{self.port}{path}?{urlencode({TOKEN_PARAM: self.token})}"


def ui_access(token: str, port: int, host: str = "127.0.0.1") -> UiAccess:
    """The rules for a browser run on `host`:`port` (loopback names and `host` are the only
    Host values accepted, with this port)."""
    names = trusted_hosts(host)
    return UiAccess(
        token=check_token(token),
        port=port,
        allowed_hosts=tuple(f"{name}:{port}" for name in names),
        allowed_origins=tuple(f"http://{name}:{port}" for name in names),
    )


class UiAccessMiddleware:
    """Every HTTP request through the rules of `access` (see the module's docstring); every
    response with `SECURITY_HEADERS`. Refusals are short plain-text answers: 421 for a Host
    that does not name this server, 403 for a foreign Origin or a failed CSRF check, 401
    without the token."""

    def __init__(self, app: ASGIApp, access: UiAccess) -> None:
        self.app = app
        self.access = access
        self._token = access.token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.lower(): value for name, value in scope.get("headers", [])}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, reason = refusal
            log.info("refused %s %s: %s", scope["method"], scope["path"], reason)
            await _plain(send, status, reason)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if TOKEN_PARAM in query:  # the printed URL: keep the token in a cookie, drop it here
            rest = urlencode([(k, v) for k, v in query.items() if k != TOKEN_PARAM])
            location = quote(scope["path"]) + (f"?{rest}" if rest else "")
            cookie = f"{self.access.cookie}={self.access.token}; Path=/; HttpOnly; SameSite=Strict"
            await _redirect(send, location, cookie)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        host = headers.get(b"host", b"").decode("latin-1").lower()
        if host not in self.access.allowed_hosts:
            return 421, "this server answers only as " + " or ".join(self.access.allowed_hosts)
        origin = headers.get(b"origin", b"").decode("latin-1").lower()
        if origin and origin not in self.access.allowed_origins:
            return 403, "requests from other origins are refused"
        if not self._authorized(scope, headers):
            return 401, (
                "this page needs the token of this run: open the URL `smartsearch-mcp ui` "
                "printed (it carries ?token=…)"
            )
        if scope["method"] not in SAFE_METHODS:
            sent = headers.get(TOKEN_HEADER.encode(), b"")
            if not (sent and hmac.compare_digest(sent, self._token)):
                return 403, f"a change needs the {TOKEN_HEADER} header (the page's own script)"
            if not origin and headers.get(b"sec-fetch-site") != b"same-origin":
                return 403, "a change must come from this page (no Origin given)"
        return None

    def _authorized(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        given: list[bytes] = []
        if TOKEN_HEADER.encode() in headers:
            given.append(headers[TOKEN_HEADER.encode()])
        given.extend(_cookies(headers.get(b"cookie", b""), self.access.cookie.encode()))
        query = scope.get("query_string", b"").decode("latin-1")
        given.extend(v.encode() for k, v in parse_qsl(query) if k == TOKEN_PARAM)
        return any(hmac.compare_digest(value, self._token) for value in given)


def _cookies(header: bytes, name: bytes) -> Sequence[bytes]:
    values = []
    for part in header.split(b";"):
        key, _, value = part.strip().partition(b"=")
        if key == name:
            values.append(value)
    return values


async def _plain(send: Send, status: int, text: str) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, cookie: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1", "replace")),
                (b"set-cookie", cookie.encode()),
                (b"content-length", b"0"),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
