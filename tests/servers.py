"""Real server processes for the reliability tests: stdio servers, an HTTP server, the CLI.

Every subprocess runs this checkout's code (cwd and PYTHONPATH point at the repository), so
a test never exercises another installed copy of smartsearch-mcp.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import anyio
import httpx
from mcp import StdioServerParameters

REPO = Path(__file__).resolve().parents[1]

# Lexical ranking only: no model loads, so many server processes fit on two cores.
LEXICAL_TOML = """
[nlp]
spacy_models = []
[retrieval]
dense = false
[rank]
scorers = ["lexical"]
"""


# The first request of an MCP session, and the notification that completes the handshake,
# for tests that speak the protocol on a raw pipe or socket.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def write_lexical_config(directory: Path) -> Path:
    path = directory / "lexical.toml"
    path.write_text(LEXICAL_TOML)
    return path


def subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a server subprocess: this checkout first on the path, hub off."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    env.pop("SMARTSEARCH_TOKEN", None)
    env.update(extra)
    return env


def cli_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "smartsearch_mcp", *args]


def stdio_server(db: Path | str, config: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "smartsearch_mcp", "serve", "--db", str(db), "--config", str(config), *extra],
        env=subprocess_env(),
        cwd=str(REPO),
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def http_server(
    db: Path | str,
    config: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    stderr: IO[bytes] | None = None,
    probe_host: str = "127.0.0.1",
    insecure: bool | None = None,
) -> AsyncIterator[tuple[str, subprocess.Popen[bytes]]]:
    """`serve --http` on a free port; yields (base URL, process) once it accepts connections.
    `insecure` (by default: when no token is given, by `--token` in `extra` or
    $SMARTSEARCH_TOKEN in `env`) passes `--insecure`, for tests about anything but
    authentication."""
    port = free_port()
    if insecure is None:
        insecure = "--token" not in extra and "SMARTSEARCH_TOKEN" not in (env or {})
    if insecure:
        extra = (*extra, "--insecure")
    process = subprocess.Popen(
        cli_command(
            "serve",
            "--http",
            "--port",
            str(port),
            "--db",
            str(db),
            "--config",
            str(config),
            "--no-preload",
            *extra,
        ),
        stdout=subprocess.PIPE,
        stderr=stderr if stderr is not None else subprocess.PIPE,
        env=env or subprocess_env(),
        cwd=str(REPO),
    )
    base = f"http://{probe_host}:{port}"
    try:
        with anyio.fail_after(60):
            while True:
                try:
                    async with httpx.AsyncClient() as http:
                        await http.get(f"{base}/")
                    break
                except httpx.TransportError:
                    if process.poll() is not None:
                        err = process.stderr.read().decode() if process.stderr else ""
                        raise AssertionError(f"the HTTP server exited: {err}") from None
                    await anyio.sleep(0.1)
        yield base, process
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=30)


def run_cli(
    args: Sequence[str], env: dict[str, str] | None = None, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        cli_command(*args),
        capture_output=True,
        text=True,
        env=env or subprocess_env(),
        cwd=str(REPO),
        **kwargs,
    )
