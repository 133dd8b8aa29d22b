"""`ui`: the memory browser (smartsearch_mcp.ui) — check the database, bind 127.0.0.1,
print the URL carrying this run's token, open it in the default browser, serve until Ctrl-C.
Imported when the command line builds its parser, so it imports nothing heavy at module
level."""

from __future__ import annotations

import argparse
import logging
import sys

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import namespace_choice, resolve_db
from smartsearch_mcp.config import Config

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
DEFAULT_PORT = 8770


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of `ui`."""
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0 picks a free one)",
    )
    parser.add_argument(
        "--no-browser", action="store_true", help="print the URL, do not open a browser"
    )
    parser.add_argument(
        "--allow-forget",
        action="store_true",
        help="let the page delete turns and sessions (each after a confirmation step); "
        "default: read-only, unless ui.allow_forget is set",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    """Serve the browser for the command's database and namespace until interrupted; 0 on
    a clean stop."""
    import secrets
    import webbrowser

    import anyio

    from smartsearch_mcp.http_serve import bind_sockets, http_limits, serve_on_sockets
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.store import describe_database
    from smartsearch_mcp.types import InputError
    from smartsearch_mcp.ui.access import ui_access
    from smartsearch_mcp.ui.app import create_ui_app

    db = resolve_db(args, config)
    namespace = namespace_choice(args, config)
    if not 0 <= args.port <= 65535:
        raise InputError(f"--port {args.port} is not a port number (0-65535)")

    async def check() -> None:  # a missing or broken database: one line, before binding
        memory = await Memory.open(config, db, namespace.namespace, read_only=True)
        await memory.close()

    anyio.run(check)
    sockets = bind_sockets(HOST, args.port)
    port = sockets[0].getsockname()[1]
    access = ui_access(secrets.token_urlsafe(32), port, HOST)
    allow_forget = bool(args.allow_forget or config.ui.allow_forget)
    app = create_ui_app(config, db, namespace.namespace, access, allow_forget=allow_forget)
    url = access.url(HOST)
    mode = "deletions allowed" if allow_forget else "read-only"
    print(
        f"smartsearch-mcp memory browser: {describe_database(db)}, {namespace.describe()}, "
        f"config {config.source} ({mode}); Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    print(f"open {url}", flush=True)
    if not args.no_browser:
        webbrowser.open(url)
    try:
        serve_on_sockets(app, HOST, port, http_limits(), sockets, args.log_level)
    except KeyboardInterrupt:
        return 0
    return 0


UI = Command(
    "ui",
    help="browse the memory in a local web page; replay recalls",
    add_options=add_options,
    run=run,
    ranks=True,
)
