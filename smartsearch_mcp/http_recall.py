"""Recall through a running `serve --http` (its models are loaded: the answer comes at once),
as an MCP client of it; failures say where and what to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from smartsearch_mcp.http_access import TOKEN_ENV
from smartsearch_mcp.types import InputError, SmartSearchError


@dataclass(frozen=True)
class RemoteRecall:
    """The server's answer: its text, and its structured result."""

    text: str
    structured: Any


def recall_over_http(url: str, arguments: dict[str, Any], token: str | None) -> RemoteRecall:
    """The recall tool of the server at `url` called with `arguments`, sending `token` as the
    bearer token; SmartSearchError when it cannot be reached or refuses the token,
    InputError when it refuses the recall."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None

    async def call() -> Any:
        with anyio.fail_after(120):
            async with (
                create_mcp_http_client(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return await client.call_tool("recall", arguments)

    try:
        result = anyio.run(call)
    except Exception as exc:  # a connection, HTTP or protocol failure: say where and what
        if http_status(url, headers) == 401:
            given = "the token in $SMARTSEARCH_TOKEN was refused" if token else "no token given"
            raise SmartSearchError(
                f"the server at {url} is running and needs its bearer token ({given}): "
                f"set {TOKEN_ENV} to the token `serve --http` printed (or was given) — e.g. "
                f"{TOKEN_ENV}=… smartsearch-mcp recall --server {url} '…'"
            ) from exc
        raise SmartSearchError(
            f"cannot recall through the server at {url} ({type(exc).__name__}: {exc}); is "
            "`smartsearch-mcp serve --http` running there? Unset $SMARTSEARCH_URL (or drop "
            "--server) to recall here"
        ) from exc
    text = "".join(getattr(part, "text", "") for part in result.content)
    if result.is_error:
        raise InputError(text or "the server refused the recall")
    return RemoteRecall(text, result.structured_content)


def http_status(url: str, headers: dict[str, str] | None) -> int | None:
    """The HTTP status the server at `url` answers a bare MCP request with (the MCP client's
    errors do not carry it), or None when it cannot be reached."""
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream", **(headers or {})}
    try:
        return httpx.post(url, json=body, headers=accept, timeout=5).status_code
    except httpx.HTTPError:
        return None
