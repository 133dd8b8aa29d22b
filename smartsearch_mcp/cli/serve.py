"""`serve`: the MCP server over stdio (the default) or streamable HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

import anyio

from smartsearch_mcp import __version__
from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import namespace_choice, resolve_db
from smartsearch_mcp.config import Config

log = logging.getLogger("smartsearch_mcp")


def add_options(serve: argparse.ArgumentParser) -> None:
    """The options of `serve`."""
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, default=8765, help="HTTP port (default 8765)")
    serve.add_argument(
        "--token",
        default=None,
        help="HTTP bearer token clients must send (default: $SMARTSEARCH_TOKEN; on "
        "127.0.0.1 without one, a token is made for the run and shown on stderr)",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="serve HTTP with no token: every local user (and, beyond 127.0.0.1, everyone "
        "who can reach the port) can read and delete the memories",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name clients use to reach the server (repeatable; loopback names and "
        "the bound address are always allowed)",
    )
    serve.add_argument(
        "--max-request-mb",
        type=int,
        default=16,
        help="largest HTTP request body accepted, in MiB (default 16)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="HTTP: close a connection whose request line and headers are not complete "
        "this long after they start, with 408 (default 10)",
    )
    serve.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="HTTP: close a connection whose request body stalls this long (default 30)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="HTTP: close an idle kept-alive connection after this long (default 5)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        metavar="N",
        help="HTTP: open connections at most; beyond it the one waiting longest for its "
        "headers is closed, or, all busy, the new one gets 503 (default 256)",
    )
    serve.add_argument(
        "--no-preload", action="store_true", help="load models on the first recall, not at start"
    )
    serve.add_argument(
        "--no-cli-socket",
        action="store_true",
        help="do not answer `smartsearch-mcp recall` on this database through a private "
        "Unix socket (by default a running server does, warm)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    """Serve until the client closes stdin (0) or Ctrl-C (130); HTTP until Ctrl-C."""
    from smartsearch_mcp.server import create_server, http_app
    from smartsearch_mcp.stdio_transport import run_stdio
    from smartsearch_mcp.store import describe_database

    access = None
    if args.http:
        from smartsearch_mcp.http_access import TOKEN_ENV, http_access
        from smartsearch_mcp.http_serve import bind_sockets, http_limits

        # Checked and bound before anything opens: a refused start changes nothing.
        access = http_access(
            args.host,
            args.token or os.environ.get(TOKEN_ENV),
            insecure=args.insecure,
            extra_hosts=args.allowed_host,
            max_request_mb=args.max_request_mb,
        )
        limits = http_limits(
            args.header_timeout, args.body_timeout, args.keep_alive_timeout, args.max_connections
        )
        sockets = bind_sockets(args.host, args.port)
    db = resolve_db(args, config)
    choice = namespace_choice(args, config)
    namespace = choice.namespace
    anyio.run(_check_database, db, config)  # a bad database: one line and exit 1, at once
    server = create_server(
        config,
        db,
        namespace=namespace,
        preload_models=not args.no_preload,
        cli_socket=not args.no_cli_socket,
    )
    log.info("serving %s (config: %s; %s)", describe_database(db), config.source, choice.describe())
    serving = (
        f"database {describe_database(db)}, config {config.source}, namespace "
        f"{namespace or config.scope.default_namespace} (Ctrl-C stops it)"
    )
    if access is not None:
        from smartsearch_mcp.http_access import start_notices
        from smartsearch_mcp.http_serve import serve_on_sockets

        # What the user must know first: a generated token, the Host names a wildcard
        # bind accepts.
        for notice in start_notices(access, args.port):
            print(notice, file=sys.stderr, flush=True)
        token = "bearer token required" if access.token else "no token"
        _announce(
            f"smartsearch-mcp {__version__} serving MCP over HTTP at "
            f"http://{args.host}:{args.port}/mcp ({token}): {serving}"
        )
        serve_on_sockets(
            http_app(server, access), args.host, args.port, limits, sockets, args.log_level
        )
        return 0
    _announce(f"smartsearch-mcp {__version__} serving MCP over stdio: {serving}")
    # 0 when the client closed stdin, 130 on Ctrl-C (SIGINT), as shells report it.
    status = anyio.run(run_stdio, server)
    log.info("stopped")
    _exit_without_waiting_for_models(status)
    return status


async def _check_database(db: str, config: Config) -> None:
    """Open (creating or migrating) and close the database: errors surface before serving."""
    from smartsearch_mcp.store import open_store

    store = await open_store(db, busy_timeout_ms=config.store.busy_timeout_ms)
    await store.close()


def _announce(message: str) -> None:
    """One line to stderr whatever the log level: what the server is serving."""
    print(message, file=sys.stderr, flush=True)


def _exit_without_waiting_for_models(status: int) -> None:
    """End the process now when only a model load (the warm-up's or a recall's, up to 20 s)
    is left running in a worker thread: the database is closed by now, nothing is lost."""
    busy = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if not busy:
        return
    log.info("exiting without waiting for %d model-loading thread(s)", len(busy))
    sys.stdout.flush()
    sys.stderr.flush()
    for handler in logging.getLogger().handlers:
        handler.flush()
    os._exit(status)


def port_number(text: str) -> int:
    """A TCP port number from the command line (argparse type)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return port


SERVE = Command(
    "serve",
    help="run the MCP server (stdio by default)",
    add_options=add_options,
    run=run,
    ranks=True,
)
