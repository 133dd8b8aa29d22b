"""Command line: serve | recall | grep | timeline | hook | install | uninstall | import |
export | stats | doctor | models | bench.

Environment variables are read here only: SMARTSEARCH_DB, SMARTSEARCH_CONFIG,
SMARTSEARCH_NAMESPACE, SMARTSEARCH_TOKEN. Logs go to stderr (stdout is the MCP wire in `serve`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from smartsearch_mcp import __version__
from smartsearch_mcp.config import Config
from smartsearch_mcp.namespaces import NamespaceChoice, choose_namespace
from smartsearch_mcp.types import InputError, SmartSearchError

if TYPE_CHECKING:
    import socket

    from smartsearch_mcp.http_access import HttpAccess
    from smartsearch_mcp.http_serve import HttpLimits

log = logging.getLogger("smartsearch_mcp")

APP_NAME = "smartsearch-mcp"
T = TypeVar("T")


def default_db_path() -> Path:
    """The database in the platform's user data dir (e.g. ~/.local/share/smartsearch-mcp)."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "memory.db"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    if args.handler is _cmd_hook:
        code = _cmd_hook(args)
        from smartsearch_mcp.inject import abandoned

        if abandoned():  # a recall past its time limit: leave now, do not wait for it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    try:
        config = load_config(args)
        result = args.handler(args, config)
        sys.stdout.flush()
    except InputError as exc:
        print(f"error: {_cli_wording(str(exc))}", file=sys.stderr)
        # A command whose only input is its arguments was misused (2); an import's file holds
        # the bad value (1, like any other error).
        return 1 if args.handler in (_cmd_import, _cmd_bench) else 2
    except SmartSearchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except sqlite3.Error as exc:  # e.g. corruption SQLite found in the middle of a command
        from smartsearch_mcp.store import describe_database
        from smartsearch_mcp.store.files import describe_error

        db = args.db or os.environ.get("SMARTSEARCH_DB") or "(the database)"
        print(f"error: {describe_error(describe_database(db), exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): what was asked is done; say nothing more and
        # keep Python from reporting the pipe again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return int(result or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=APP_NAME, description="SmartSearch long-term memory for MCP agents."
    )
    _add_common(parser, argparse.SUPPRESS)
    parser.set_defaults(db=None, config=None, namespace=None, log_level="warning")
    # Subcommands accept the same options after their name; SUPPRESS keeps a value given
    # before the subcommand from being reset to a default.
    common = argparse.ArgumentParser(add_help=False)
    _add_common(common, argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = sub.add_parser("serve", parents=[common], help="run the MCP server (stdio by default)")
    serve.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8765, help="HTTP port (default 8765)")
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
    serve.set_defaults(handler=_cmd_serve)

    recall = sub.add_parser("recall", parents=[common], help="recall from memory")
    recall.add_argument("query")
    recall.add_argument("--max-tokens", type=int, default=None)
    recall.add_argument("--session-id", default=None)
    recall.add_argument("--since", default=None)
    recall.add_argument("--until", default=None)
    recall.add_argument("--json", action="store_true", help="print the structured result")
    recall.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="ask a running `serve --http` (e.g. http://127.0.0.1:8765/mcp; default "
        "$SMARTSEARCH_URL) — its models are loaded, so the answer comes at once; "
        "$SMARTSEARCH_TOKEN is its bearer token",
    )
    recall.add_argument(
        "--local",
        action="store_true",
        help="recall in this process even when a server running on the same database with "
        "the same settings could answer (warm) through its socket",
    )
    recall.set_defaults(handler=_cmd_recall)

    remember = sub.add_parser(
        "remember", parents=[common], help="store a note verbatim (the remember tool)"
    )
    remember.add_argument(
        "text", nargs="?", default=None, help="the note; read from stdin when omitted or '-'"
    )
    remember.add_argument("--speaker", default=None, help="who said it")
    remember.add_argument("--role", default=None, help="e.g. user, assistant")
    remember.add_argument(
        "--timestamp", default=None, help="when it was said (ISO 8601; default: now)"
    )
    remember.add_argument(
        "--session-id", default=None, help="add it to this session (default: a new one)"
    )
    remember.add_argument("--json", action="store_true", help="print the structured result")
    remember.set_defaults(handler=_cmd_remember)

    forget = sub.add_parser(
        "forget", parents=[common], help="delete turns permanently (the forget tool)"
    )
    forget.add_argument(
        "--id", type=int, action="append", dest="ids", metavar="ID", help="a turn id (repeatable)"
    )
    forget.add_argument("--session-id", default=None, help="every turn of this session")
    forget.add_argument(
        "--all", action="store_true", dest="whole", help="the whole namespace (with --yes)"
    )
    forget.add_argument("--yes", action="store_true", help="confirm --all")
    forget.add_argument("--json", action="store_true", help="print the structured result")
    forget.set_defaults(handler=_cmd_forget)

    redact = sub.add_parser(
        "redact",
        parents=[common],
        help="find secrets stored by earlier releases (or with redaction off); --apply "
        "replaces them by [REDACTED:kind] placeholders",
    )
    redact.add_argument(
        "--scan", action="store_true", help="only report what is found (what it does by default)"
    )
    redact.add_argument(
        "--apply", action="store_true", help="rewrite those turns (asks first; then VACUUM)"
    )
    redact.add_argument("--yes", action="store_true", help="do not ask before --apply")
    redact.set_defaults(handler=_cmd_redact)

    grep = sub.add_parser(
        "grep", parents=[common], help="find turns containing exact text (or a regex)"
    )
    grep.add_argument("pattern")
    grep.add_argument("--regex", action="store_true", help="PATTERN is a regular expression")
    grep.add_argument("--limit", type=int, default=None, help="most turns to show (max 500)")
    grep.add_argument("--session-id", default=None)
    grep.add_argument("--json", action="store_true", help="print the structured result")
    grep.set_defaults(handler=_cmd_grep)

    timeline = sub.add_parser("timeline", parents=[common], help="turns in time order")
    timeline.add_argument("--since", default=None, help="a date, or e.g. yesterday, last week")
    timeline.add_argument("--until", default=None, help="a date, or e.g. yesterday")
    timeline.add_argument("--session-id", default=None)
    timeline.add_argument("--limit", type=int, default=None, help="most turns (max 500)")
    timeline.add_argument("--json", action="store_true", help="print the structured result")
    timeline.set_defaults(handler=_cmd_timeline)

    hook = sub.add_parser(
        "hook",
        parents=[common],
        help="capture a conversation from a client hook (JSON payload on stdin)",
        description="Run by a client's hook: reads the hook's JSON from stdin and stores the "
        "turns in the project's namespace; on user-prompt, then prints the past turns the "
        "ranking is sure of for the agent's context ([inject] in the config). Always exits "
        "0; problems go to hooks.log next to the database.",
    )
    hook.add_argument("client", choices=["claude-code", "codex"])
    hook.add_argument("event", choices=["user-prompt", "stop", "pre-compact"])
    hook.add_argument(
        "--no-inject",
        action="store_true",
        help="user-prompt: only store the prompt, add no past turns to the agent's context "
        "(see [inject] in the config)",
    )
    hook.set_defaults(handler=_cmd_hook)

    imp = sub.add_parser("import", parents=[common], help="import conversations from a file")
    imp.add_argument("file")
    imp.add_argument(
        "--format",
        choices=["jsonl", "chatgpt", "claude", "claude-code"],
        dest="fmt",
        help="default: told from the file's contents; claude-code: a transcript .jsonl or a "
        "directory like ~/.claude/projects",
    )
    imp.add_argument("--no-progress", action="store_true")
    imp.set_defaults(handler=_cmd_import)

    embed = sub.add_parser(
        "embed",
        parents=[common],
        help="embed stored turns for dense ranking now (a running server does it in the "
        "background)",
    )
    embed.add_argument("--no-progress", action="store_true")
    embed.set_defaults(handler=_cmd_embed)

    exp = sub.add_parser("export", parents=[common], help="export turns as JSONL")
    exp.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    exp.add_argument("--all", action="store_true", help="every namespace, not only one")
    exp.set_defaults(handler=_cmd_export)

    move = sub.add_parser(
        "migrate",
        parents=[common],
        help="copy a memory to another database (SQLite <-> PostgreSQL), resumable, verified",
    )
    move.add_argument("--from", dest="source", required=True, help="database to copy from")
    move.add_argument("--to", dest="target", required=True, help="database to copy into")
    move.add_argument("--batch", type=int, default=5000, help="rows per transaction")
    move.set_defaults(handler=_cmd_migrate)

    stats = sub.add_parser("stats", parents=[common], help="what is stored")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(handler=_cmd_stats)

    doctor = sub.add_parser(
        "doctor", parents=[common], help="check the database and models; print client config"
    )
    doctor.add_argument("--skip-models", action="store_true", help="do not try loading models")
    doctor.set_defaults(handler=_cmd_doctor)

    models = sub.add_parser("models", parents=[common], help="list the configured models")
    models.add_argument("action", nargs="?", choices=["list", "download"], default="list")
    models.set_defaults(handler=_cmd_models)

    for name, verb in (("install", "add"), ("uninstall", "remove")):
        command = sub.add_parser(
            name,
            parents=[common],
            help=f"{verb} the MCP server (and capture hooks) in a client's config",
        )
        command.add_argument("client", choices=["claude-code", "claude-desktop", "cursor", "codex"])
        command.add_argument(
            "--project",
            action="store_true",
            help="the current project's config files instead of the user's",
        )
        command.add_argument("--dry-run", action="store_true", help="show, write nothing")
        command.set_defaults(handler=_cmd_install, handler_name=name)

    bench = sub.add_parser(
        "bench",
        parents=[common],
        help="run a benchmark (see README)",
        description="Benchmarks: locomo PATH | beam PATH | longmemeval FILE | small | scale | "
        "report DIR... — run `smartsearch-mcp bench locomo --help` (etc.) for each one's options.",
    )
    bench.add_argument("bench_args", nargs=argparse.REMAINDER)
    bench.set_defaults(handler=_cmd_bench)
    return parser


# ---------------------------------------------------------------------- settings


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument(
        "--db",
        default=default,
        help="database file, or a postgresql://user@host/dbname URL for a memory a team shares "
        "(default: $SMARTSEARCH_DB, else the user data dir); ':memory:' works",
    )
    parser.add_argument(
        "--config",
        default=default,
        help="TOML config file or preset name in configs/ (e.g. offline)",
    )
    parser.add_argument(
        "--namespace",
        default=default,
        help="memory namespace (default: $SMARTSEARCH_NAMESPACE; else, inside a git "
        "repository, the project's namespace; else 'default'); 'auto' skips to the project",
    )
    parser.add_argument(
        "--log-level", default=default, help="debug, info, warning, error (default: warning)"
    )


def load_config(args: argparse.Namespace) -> Config:
    """--config, else $SMARTSEARCH_CONFIG, else the preset that can run on this installation
    (see smartsearch_mcp.models.presets); `Config.source` says which and why. Commands that
    rank nothing (remember, grep, timeline, forget, export, stats, hooks) skip the choice
    (it may probe the network) and use the built-in defaults: presets differ only in models."""
    given = args.config or os.environ.get("SMARTSEARCH_CONFIG")
    if given:
        return Config.load(given)
    if getattr(args, "handler", None) not in _RANKING_COMMANDS:
        return Config()
    from smartsearch_mcp.models.presets import choose_preset

    choice = choose_preset()
    args.chosen_preset = choice
    log.info("config: %s", choice.describe())
    return dataclasses.replace(Config.load(choice.name), source=choice.describe())


def config_option(args: argparse.Namespace) -> str | None:
    """The --config a client's server command needs: the one given, else the chosen preset
    when it is not the default (a client's environment need not match this shell's)."""
    given = args.config or os.environ.get("SMARTSEARCH_CONFIG")
    if given:
        return str(given)
    chosen = getattr(args, "chosen_preset", None)
    return chosen.name if chosen is not None and chosen.name != "default" else None


def resolve_db(args: argparse.Namespace, config: Config) -> str:
    value = args.db or os.environ.get("SMARTSEARCH_DB") or config.store.path
    return value if value else str(default_db_path())


def namespace_choice(args: argparse.Namespace, config: Config) -> NamespaceChoice:
    """The namespace every command uses, and why (see smartsearch_mcp.namespaces):
    --namespace, else $SMARTSEARCH_NAMESPACE, else the git project of the working directory,
    else scope.default_namespace."""
    return choose_namespace(
        args.namespace,
        os.environ.get("SMARTSEARCH_NAMESPACE"),
        Path.cwd(),
        config.scope.default_namespace,
    )


def resolve_namespace(args: argparse.Namespace, config: Config) -> str:
    """The namespace of `namespace_choice`."""
    return namespace_choice(args, config).namespace


# ---------------------------------------------------------------------- commands


def _cmd_serve(args: argparse.Namespace, config: Config) -> int:
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
        _serve_http(args, http_app(server, access), access, limits, sockets, serving)
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


def _serve_http(
    args: argparse.Namespace,
    app: Any,
    access: HttpAccess,
    limits: HttpLimits,
    sockets: list[socket.socket],
    serving: str,
) -> None:
    """Run uvicorn on the bound `sockets` with the guarded protocol, after telling the user
    what they must know (a generated token, the Host names a wildcard bind accepts)."""
    import uvicorn

    from smartsearch_mcp.http_access import start_notices
    from smartsearch_mcp.http_serve import guarded_protocol

    settings = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        http=guarded_protocol(limits),
        ws="none",
        timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
        timeout_graceful_shutdown=limits.shutdown_timeout,  # type: ignore[arg-type]
        log_config=None,  # uvicorn logs through our stderr handler, access logs included
        log_level=args.log_level,
    )
    for notice in start_notices(access, args.port):
        print(notice, file=sys.stderr, flush=True)
    token = "bearer token required" if access.token else "no token"
    _announce(
        f"smartsearch-mcp {__version__} serving MCP over HTTP at "
        f"http://{args.host}:{args.port}/mcp ({token}): {serving}"
    )
    try:
        anyio.run(functools.partial(uvicorn.Server(settings).serve, sockets=sockets))
    finally:
        for sock in sockets:
            sock.close()


def _port(text: str) -> int:
    """A TCP port number from the command line (argparse type)."""
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return port


async def _open_memory(args: argparse.Namespace, config: Config, read_only: bool = False) -> Any:
    """The command's memory; `read_only` for commands that only read (the database must
    exist then, and nothing is written to it)."""
    from smartsearch_mcp.memory import Memory

    namespace = resolve_namespace(args, config)
    return await Memory.open(config, resolve_db(args, config), namespace, read_only=read_only)


def _on_project_memory(
    args: argparse.Namespace,
    config: Config,
    call: Callable[[Any], Awaitable[T]],
    read_only: bool = False,
) -> T:
    """`call` on the memory of the command's namespace (`namespace_choice`), closed
    afterwards."""

    async def run() -> T:
        memory = await _open_memory(args, config, read_only=read_only)
        try:
            return await call(memory)
        finally:
            await memory.close()

    return anyio.run(run)


def _cmd_recall(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.output import format_recall, recall_output

    url = args.server or os.environ.get("SMARTSEARCH_URL")
    if url:
        return _recall_via_server(url, args, config)
    if not args.local and _recall_via_socket(args, config):
        return 0

    result = _on_project_memory(
        args,
        config,
        lambda memory: memory.recall(
            args.query,
            args.max_tokens,
            session_id=args.session_id,
            since=args.since,
            until=args.until,
        ),
        read_only=True,
    )
    if args.json:
        print(recall_output(result).model_dump_json(indent=2))
    else:
        print(format_recall(args.query, result))
        _say_namespace(args, config)
    return 0


def _recall_via_socket(args: argparse.Namespace, config: Config) -> bool:
    """Print the answer of a server already running on this database with these settings
    (models loaded: no seconds of loading here); False when there is none."""
    from smartsearch_mcp.recall_socket import ask_running_server, describe

    options: dict[str, Any] = {"namespace": resolve_namespace(args, config)}
    for key in ("max_tokens", "session_id", "since", "until"):
        if getattr(args, key) is not None:
            options[key] = getattr(args, key)
    answer = ask_running_server(resolve_db(args, config), config, args.query, options)
    if answer is None:
        return False
    print(json.dumps(answer.json, indent=2, ensure_ascii=False) if args.json else answer.text)
    if not args.json:
        _say_namespace(args, config)
    print(describe(answer), file=sys.stderr)
    return True


def _http_status(url: str, headers: dict[str, str] | None) -> int | None:
    """The HTTP status the server at `url` answers a bare MCP request with (the MCP client's
    errors do not carry it), or None when it cannot be reached."""
    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"Accept": "application/json, text/event-stream", **(headers or {})}
    try:
        return httpx.post(url, json=body, headers=accept, timeout=5).status_code
    except httpx.HTTPError:
        return None


def _recall_via_server(url: str, args: argparse.Namespace, config: Config) -> int:
    """The recall tool of a running HTTP server, in this directory's namespace (the server's
    own default comes from where it was started)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from smartsearch_mcp.http_access import TOKEN_ENV

    arguments: dict[str, Any] = {"query": args.query, "namespace": resolve_namespace(args, config)}
    for key in ("max_tokens", "session_id", "since", "until"):
        if getattr(args, key) is not None:
            arguments[key] = getattr(args, key)
    token = os.environ.get(TOKEN_ENV)
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
        if _http_status(url, headers) == 401:
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
    print(json.dumps(result.structured_content, indent=2) if args.json else text)
    if not args.json:
        _say_namespace(args, config)
    return 0


def _say_namespace(args: argparse.Namespace, config: Config) -> None:
    """Which namespace was searched and why, on stderr (stdout stays the answer)."""
    sys.stdout.flush()
    print(f"searched {namespace_choice(args, config).describe()}", file=sys.stderr)


def _cmd_remember(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.types import InputError, TurnInput

    text = args.text
    if text is None or text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("give the note as an argument, or pipe it on stdin")
        text = sys.stdin.read().removesuffix("\n").removesuffix("\r")
    if not text.strip():
        raise InputError("the note is empty; nothing was stored")
    turn = TurnInput(text=text, speaker=args.speaker, role=args.role, timestamp=args.timestamp)
    result = _on_project_memory(
        args, config, lambda memory: memory.remember([turn], session_id=args.session_id)
    )
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    elif result.stored:
        print(
            f"Remembered as turn {result.ids[0]} in namespace {result.namespace!r} "
            f"(session {result.session_id})."
            + (
                f" {_plural(result.secrets_redacted, 'secret')} in it stored as [REDACTED:…]."
                if result.secrets_redacted
                else ""
            )
        )
    else:
        print(
            f"Already stored as turn {result.ids[0]} in namespace {result.namespace!r} "
            f"(session {result.session_id}); nothing added."
        )
    return 0


def _cmd_forget(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.types import InputError

    if args.whole and (args.ids or args.session_id):
        raise InputError("--all deletes the whole namespace: give it without --id/--session-id")
    if not (args.whole or args.ids or args.session_id):
        raise InputError("say what to delete: --id ID (repeatable), --session-id ID, or --all")

    async def forget(memory: Any) -> Any:
        if args.whole and not args.yes:
            namespace = memory.resolve_namespace(None)
            count = (await memory.store.namespaces()).get(namespace, 0)
            raise InputError(
                f"--all would delete all {count} turns of namespace {namespace!r}; "
                "add --yes to do that"
            )
        return await memory.forget(
            ids=args.ids, session_id=args.session_id, confirm=args.whole and args.yes
        )

    result = _on_project_memory(args, config, forget)
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    elif result.deleted_turn_ids:
        print(
            f"Deleted {len(result.deleted_turn_ids)} turn(s) from namespace {result.namespace!r}."
        )
    else:
        print(f"Nothing matched in namespace {result.namespace!r}; nothing deleted.")
    return 0


def _cmd_grep(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.output import format_grep, grep_output

    result = _on_project_memory(
        args,
        config,
        lambda memory: memory.grep(
            args.pattern, limit=args.limit, regex=args.regex, session_id=args.session_id
        ),
        read_only=True,
    )
    output = grep_output(result)
    print(output.model_dump_json(indent=2) if args.json else format_grep(output))
    if not args.json:
        _say_namespace(args, config)
    return 0


def _cmd_timeline(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.output import format_timeline, timeline_output

    result = _on_project_memory(
        args,
        config,
        lambda memory: memory.timeline(
            since=args.since, until=args.until, session_id=args.session_id, limit=args.limit
        ),
        read_only=True,
    )
    output = timeline_output(result)
    print(output.model_dump_json(indent=2) if args.json else format_timeline(output))
    if not args.json:
        _say_namespace(args, config)
    return 0


def _cmd_hook(args: argparse.Namespace) -> int:
    """Capture a hook event. Never fails the client's hook: exit code 0 whatever happens,
    problems logged to hooks.log in the data directory. Writes to stdout only what a
    user-prompt hook injects (smartsearch_mcp.inject), after the prompt is stored: the
    client adds it to the model's context."""
    from smartsearch_mcp.capture import (
        MAX_PAYLOAD_BYTES,
        capture_event,
        event_namespace,
        parse_event,
    )
    from smartsearch_mcp.store import describe_database, is_postgres_url, open_store

    db = args.db or os.environ.get("SMARTSEARCH_DB") or ""
    local = db and db != ":memory:" and not is_postgres_url(db)
    log_file = Path(db).expanduser().parent if local else default_db_path().parent
    raising, logging.raiseExceptions = logging.raiseExceptions, False  # full disk: no trace
    handler = _hook_log_handler(log_file / "hooks.log")
    try:
        config = load_config(args)
        db = resolve_db(args, config)
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        if len(raw) > MAX_PAYLOAD_BYTES:
            raise SmartSearchError(f"hook payload larger than {MAX_PAYLOAD_BYTES} bytes")
        event = parse_event(args.client, args.event, raw.decode("utf-8", "replace"))
        namespace = event_namespace(
            event,
            args.namespace,
            os.environ.get("SMARTSEARCH_NAMESPACE"),
            os.getcwd(),
            config.scope.default_namespace,
        ).namespace

        async def run() -> None:
            store = await open_store(
                db,
                busy_timeout_ms=config.store.busy_timeout_ms,
                max_turns_per_call=config.store.max_turns_per_call,
                max_text_chars=config.store.max_text_chars,
                max_call_chars=config.store.max_call_chars,
                redact_secrets=config.store.redact_secrets,
                verbatim_namespaces=config.store.verbatim_namespaces,
            )
            try:
                result = await capture_event(store, event, namespace)
            finally:
                await store.close()
            stored = result.stored if result else 0
            log.info(
                "hook %s %s: stored %d turns in %s / %s",
                args.client,
                args.event,
                stored,
                namespace,
                event.session_id,
            )

        began = datetime.now(UTC)
        anyio.run(run)
        wants_context = config.inject.enabled and not getattr(args, "no_inject", False)
        if args.event == "user-prompt" and event.prompt and wants_context:
            _inject_for_prompt(config, db, event, namespace, began)
    except SmartSearchError as exc:  # e.g. a database that cannot be opened: one clear line
        log.error("hook %s %s failed: %s", args.client, args.event, exc)
    except sqlite3.Error as exc:  # e.g. corruption met while storing
        from smartsearch_mcp.store.files import describe_error

        log.error(
            "hook %s %s failed: %s",
            args.client,
            args.event,
            describe_error(describe_database(db), exc),
        )
    except Exception:  # a hook must never fail the agent: record and carry on
        log.exception("hook %s %s failed", args.client, args.event)
    finally:
        logging.getLogger().removeHandler(handler)
        with contextlib.suppress(Exception):  # a full disk fails the log's last flush
            handler.close()
        logging.raiseExceptions = raising
    return 0


def _inject_for_prompt(
    config: Config, db: str, event: Any, namespace: str, began: datetime
) -> None:
    """Print the past turns worth adding to the agent's context for the prompt of `event`
    (nothing when none clears the bar or the recall is over its time limit), from the turns
    stored before the hook `began`."""
    from smartsearch_mcp.capture import session_key
    from smartsearch_mcp.dates import format_timestamp
    from smartsearch_mcp.inject import build_injection, hook_output, recall_for_prompt
    from smartsearch_mcp.tokens import get_token_counter

    prompt = event.prompt
    until = format_timestamp(began)
    injection = build_injection(
        lambda: recall_for_prompt(db, config, prompt, namespace, until),
        prompt,
        namespace,
        session_key(event),
        config,
        get_token_counter(config.truncation.tokenizer),
    )
    log.info(
        "hook %s user-prompt: %s (%d passages, %d tokens%s)",
        event.client,
        injection.reason,
        len(injection.passages),
        injection.tokens,
        f", {injection.source} recall" if injection.source else "",
    )
    if injection.text:
        sys.stdout.write(hook_output(event.client, injection.text) + "\n")
        sys.stdout.flush()


def _hook_log_handler(path: Path) -> logging.Handler:
    """Log INFO and above to `path` (falling back to stderr when it cannot be opened)."""
    from smartsearch_mcp.store.files import make_private_dir

    handler: logging.Handler
    try:
        make_private_dir(path.parent)
        # The log names sessions and projects: private like the database.
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o600))
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        handler = logging.FileHandler(path, encoding="utf-8")
    except OSError:
        handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for other in root.handlers:  # stderr keeps showing warnings only
        other.setLevel(max(other.level, logging.WARNING))
    root.addHandler(handler)
    log.setLevel(logging.INFO)
    return handler


def _import_plan(
    memory: Any, imported_sessions: Iterable[Any], explicit: str | None, fallback: str | None
) -> list[tuple[str, str | None, list[Sequence[Any]]]]:
    """(namespace, session id, remember calls) for every session of an import, each call
    checked as `remember` will check it: a problem anywhere in the file (a turn too long, a
    bad name, a lone surrogate) is an error naming where it is before anything is stored."""
    from smartsearch_mcp.store import check_name
    from smartsearch_mcp.types import InputError

    plan: list[tuple[str, str | None, list[Sequence[Any]]]] = []
    for number, imported in enumerate(imported_sessions, start=1):
        turns = imported.session.turns
        if not turns:
            continue
        session_id = imported.session.session_id
        label = f"session {number}" + (f" ({session_id[:80]!r})" if session_id else "")
        try:
            # An explicit --namespace wins over one the file (or transcript) carries.
            namespace = memory.resolve_namespace(explicit or imported.namespace or fallback)
            if session_id is not None:
                check_name("session_id", session_id)
            batches = memory.store.call_batches(turns)
            offset = 0
            for batch in batches:
                try:
                    memory.store.check_turns(batch)
                except InputError as exc:
                    raise _renumbered(exc, offset) from exc
                offset += len(batch)
        except InputError as exc:
            raise InputError(f"{label}: {exc}; nothing was imported") from exc
        plan.append((namespace, session_id, batches))
    return plan


def _renumbered(exc: Exception, offset: int) -> Exception:
    """`exc` with "turns[i]" read as the turn's place in its session, not in its call."""
    import re

    from smartsearch_mcp.types import InputError

    text = re.sub(r"^turns\[(\d+)\]", lambda m: f"turn {int(m.group(1)) + offset + 1}", str(exc))
    return InputError(text)


def _cmd_import(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.importers import read_sessions
    from smartsearch_mcp.importers.detect import detect_format

    path = Path(args.file)
    if not path.exists():
        raise SmartSearchError(f"{path}: no such file")
    fmt = args.fmt
    if fmt is None:
        fmt = detect_format(path)
        print(
            f"reading {path} as {fmt} (told from its contents; --format to choose)", file=sys.stderr
        )

    async def run() -> int:
        memory = await _open_memory(args, config)
        stored = skipped = sessions = redacted = dated = 0
        filled: dict[str, int] = {}
        try:
            explicit = resolve_namespace(args, config) if args.namespace else None
            sessions_read = read_sessions(path, fmt)
            plan = _import_plan(memory, sessions_read, explicit, memory.namespace)
            progress = _progress(args.no_progress, f"importing {path.name}")
            for namespace, session_id, batches in plan:
                for batch in batches:
                    result = await memory.remember(
                        batch, session_id=session_id, namespace=namespace
                    )
                    session_id = result.session_id
                    stored += result.stored
                    skipped += result.duplicates_skipped
                    redacted += result.secrets_redacted
                    dated += result.dated_now
                    filled[result.namespace] = filled.get(result.namespace, 0) + result.stored
                    progress.update(len(batch))
                sessions += 1
            progress.close()
        finally:
            await memory.close()
        print(
            f"imported {_plural(stored, 'turn')} in {_plural(sessions, 'session')} "
            f"({_plural(skipped, 'duplicate')} skipped) into {memory.store.path}, "
            + _namespaces_filled(filled)
            + (f"; {_plural(redacted, 'secret')} stored as [REDACTED:…]" if redacted else "")
            + (
                f"; {_plural(dated, 'turn')} without a timestamp dated now, when imported"
                if dated
                else ""
            ),
            file=sys.stderr,
        )
        if stored and memory.pipeline.indexes_in_background():
            print(
                "the rankers need the new turns' vectors: a running server computes them in "
                "the background; `smartsearch-mcp embed` does it now (recall works meanwhile, "
                "computing what it can of them itself and ranking the rest by lexical "
                "signals)",
                file=sys.stderr,
            )
        return 0

    return anyio.run(run)


def _cmd_embed(args: argparse.Namespace, config: Config) -> int:
    async def run() -> int:
        memory = await _open_memory(args, config)
        try:
            backlog = await memory.pipeline.embedding_backlog()
            if backlog is None:
                print(
                    f"nothing to embed: config {config.source} uses neither a bi-encoder nor a "
                    "ColBERT, or they cannot be loaded (see `smartsearch-mcp models`)",
                    file=sys.stderr,
                )
                return 0
            progress = _progress(args.no_progress, "embedding", total=backlog)
            started = time.perf_counter()
            count = await memory.pipeline.embed_backlog(progress=progress.update)
            progress.close()
        finally:
            await memory.close()
        seconds = time.perf_counter() - started
        print(f"embedded {count} passages in {seconds:.1f} s", file=sys.stderr)
        return 0

    return anyio.run(run)


def export_record(turn: Any) -> dict[str, Any]:
    """A stored turn as one export line; importing it stores nothing new (see
    smartsearch_mcp.importers.jsonl)."""
    record = asdict(turn)
    if turn.timestamp is not None and turn.timestamp_raw is None:
        record["timestamp_generated"] = True  # stored "now": the turn was given without one
    return record


@contextlib.contextmanager
def _private_output(path: str) -> Any:
    """stdout for "-", else a file only its owner can read (0600, like the database): written
    to a new temporary file beside it, then moved over `path` when complete."""
    if path == "-":
        yield sys.stdout
        return
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:  # mkstemp creates it 0600
            yield out
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


async def stored_secrets(
    store: Any, namespace: str | None
) -> tuple[int, list[tuple[Any, str]], Counter[str]]:
    """(turns scanned, [(turn, its text redacted)] for those holding secrets, kinds found)."""
    from smartsearch_mcp.redact import redact

    found: list[tuple[Any, str]] = []
    kinds: Counter[str] = Counter()
    scanned = 0
    async for turn in store.iter_turns(namespace):
        scanned += 1
        redacted = redact(turn.text)
        if redacted.count:
            found.append((turn, redacted.text))
            kinds.update(redacted.kinds)
    return scanned, found, kinds


def _namespaces_filled(filled: dict[str, int]) -> str:
    """ "namespace 'a'", or "namespaces 'a' (3 turns), 'b' (1 turn)" for an import's summary."""
    if not filled:
        return "no namespace (no turns)"
    if len(filled) == 1:
        return f"namespace {next(iter(filled))!r}"
    shown = sorted(filled.items(), key=lambda item: -item[1])[:5]
    more = f" and {len(filled) - 5} more" if len(filled) > 5 else ""
    return "namespaces " + ", ".join(f"{n!r} ({_plural(c, 'turn')})" for n, c in shown) + more


def _cmd_redact(args: argparse.Namespace, config: Config) -> int:
    """Scan every stored turn (of --namespace, else of every namespace) for secrets; with
    --apply (not with --scan), rewrite the turns that hold some. Prints kinds, counts and
    turn ids, never a secret."""
    from smartsearch_mcp.store import SQLiteStore, open_store

    async def run() -> int:
        db = resolve_db(args, config)
        if args.scan and args.apply:
            raise InputError("--scan only reports; give --apply without it to rewrite")
        store = await open_store(
            db, busy_timeout_ms=config.store.busy_timeout_ms, read_only=not args.apply
        )
        try:
            namespace = resolve_namespace(args, config) if args.namespace else None
            scanned, found, kinds = await stored_secrets(store, namespace)
            where = f"namespace {namespace!r}" if namespace else "every namespace"
            print(f"scanned {_plural(scanned, 'turn')} of {where} in {store.path}")
            if not found:
                print("no secrets found")
                return 0
            print(
                f"{_plural(sum(kinds.values()), 'secret')} in {_plural(len(found), 'turn')}: "
                + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
            )
            ids = [turn.id for turn, _ in found]
            shown = ", ".join(map(str, ids[:20])) + (" …" if len(ids) > 20 else "")
            print(f"turns: {shown}")
            if not args.apply:
                print("run again with --apply to replace them by [REDACTED:kind] placeholders")
                return 0
            if not args.yes:
                if sys.stdin is None or not sys.stdin.isatty():
                    raise InputError("add --yes to rewrite these turns (nothing was changed)")
                answer = input(f"rewrite {_plural(len(found), 'turn')}? [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    print("nothing was changed")
                    return 1
            rewritten = await store.rewrite_texts(
                [turn for turn, _ in found], [text for _, text in found]
            )
            where_gone = (
                "VACUUMed the file: the old text is gone from the database, its WAL and its "
                "full-text index"
                if isinstance(store, SQLiteStore)
                else "VACUUMed the tables: PostgreSQL overwrites the old row versions as it "
                "reuses their space (VACUUM FULL turns, embeddings frees them now; it locks "
                "the tables while it runs)"
            )
            print(
                f"rewrote {_plural(rewritten, 'turn')} in one transaction and {where_gone} "
                "(not from backups, exports or copies made before); restart running servers "
                "so that their caches drop it; `smartsearch-mcp embed` recomputes the vectors"
            )
            return 0
        finally:
            await store.close()

    return anyio.run(run)


def _cmd_export(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.memory import elsewhere_hint
    from smartsearch_mcp.store import SQLiteStore, Store, open_store

    async def run() -> int:
        db = resolve_db(args, config)
        source = await open_store(db, busy_timeout_ms=config.store.busy_timeout_ms, read_only=True)
        with tempfile.TemporaryDirectory() as tmp:
            snapshot: Store = source  # PostgreSQL: iter_turns reads one consistent snapshot
            if isinstance(source, SQLiteStore):
                snapshot_path = Path(tmp) / "snapshot.db"
                try:
                    await source.backup(snapshot_path)  # consistent even while a server writes
                finally:
                    await source.close()
                snapshot = await SQLiteStore.open(snapshot_path)
            namespace = None if args.all else resolve_namespace(args, config)
            count = 0
            try:
                with _private_output(args.output) as out:
                    async for turn in snapshot.iter_turns(namespace):
                        out.write(json.dumps(export_record(turn), ensure_ascii=False) + "\n")
                        count += 1
                hint = None
                if not count and namespace is not None:
                    hint = elsewhere_hint(await snapshot.namespaces(), [namespace])
            finally:
                await snapshot.close()
        where = "" if namespace is None else f" from namespace {namespace!r}"
        print(f"exported {_plural(count, 'turn')}{where}", file=sys.stderr)
        if hint:
            print(f"note: {hint.replace('to search', 'to export (or --all)')}", file=sys.stderr)
        return 0

    return anyio.run(run)


def _cmd_migrate(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.store import describe_database, open_store
    from smartsearch_mcp.store.transfer import copy_memory

    if args.batch < 1:
        raise InputError("--batch must be at least 1")
    if args.source == args.target:
        raise InputError("--from and --to name the same database")

    async def run() -> int:
        store_config = config.store
        source = await open_store(
            args.source, busy_timeout_ms=store_config.busy_timeout_ms, read_only=True
        )
        try:
            target = await open_store(
                args.target,
                busy_timeout_ms=store_config.busy_timeout_ms,
                max_turns_per_call=store_config.max_turns_per_call,
                max_text_chars=store_config.max_text_chars,
                max_call_chars=store_config.max_call_chars,
                redact_secrets=store_config.redact_secrets,
                verbatim_namespaces=store_config.verbatim_namespaces,
            )
            try:
                report = await copy_memory(source, target, batch=args.batch)
                # rows are copied as stored: turns an earlier release (or a memory with
                # redaction off) stored with secrets are redacted in the copy, as remember would
                redacted = 0
                if config.store.redact_secrets:
                    _, holding, _ = await stored_secrets(target, None)
                    holding = [(t, x) for t, x in holding if target.redacts(t.namespace)]
                    if holding:
                        turns, texts = zip(*holding, strict=True)
                        redacted = await target.rewrite_texts(list(turns), list(texts))
            finally:
                await target.close()
        finally:
            await source.close()
        copied = ", ".join(f"{report.copied[t]} {t}" for t in report.copied)
        counted = ", ".join(f"{report.target[t]} {t}" for t in report.target)
        print(
            f"migrated {describe_database(args.source)} -> {describe_database(args.target)}: "
            f"copied {copied}; verified: both hold {counted}",
            file=sys.stderr,
        )
        if redacted:
            print(
                f"secrets replaced by [REDACTED:…] in {_plural(redacted, 'turn')} of the copy "
                "(the source holds them as stored: `smartsearch-mcp redact --apply` there; "
                "store.redact_secrets = false keeps them)",
                file=sys.stderr,
            )
        return 0

    return anyio.run(run)


def _cmd_stats(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.memory import elsewhere_hint

    async def run() -> int:
        memory = await _open_memory(args, config, read_only=True)
        try:
            stats = await memory.store.stats()
        finally:
            await memory.close()
        if args.json:
            print(json.dumps(asdict(stats), indent=2))
        else:
            print(
                f"database: {stats.database} (schema v{stats.schema_version}, "
                f"{stats.size_bytes / 1e6:.1f} MB)"
            )
            print(f"turns: {stats.turns} in {_plural(stats.sessions, 'session')}")
            print(f"dates: {stats.first_timestamp or '-'} .. {stats.last_timestamp or '-'}")
            for ns, count in stats.namespaces.items():
                here = "  (this directory's)" if ns == memory.namespace else ""
                print(f"  namespace {ns}: {_plural(count, 'turn')}{here}")
            choice = namespace_choice(args, config)
            print(f"this directory uses {choice.describe()}")
            if hint := elsewhere_hint(stats.namespaces, [memory.namespace]):
                print(f"note: {hint}")
        return 0

    return anyio.run(run)


def _cmd_doctor(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.store import describe_database, is_postgres_url, open_store

    ok = True
    db = resolve_db(args, config)
    shown = describe_database(db)
    print(f"smartsearch-mcp {__version__}; python {sys.version.split()[0]}")
    print(f"config: {config.source}")
    print(f"namespace here: {namespace_choice(args, config).describe()}")

    async def check_db() -> list[str]:
        # Read-only: doctor reports on the database as it is, never creates or changes it.
        store = await open_store(db, busy_timeout_ms=config.store.busy_timeout_ms, read_only=True)
        try:
            problems = await store.integrity_check()
            try:
                stats = await store.stats()
                print(f"database: {shown} — {stats.turns} turns, schema v{stats.schema_version}")
            except sqlite3.DatabaseError as exc:
                problems.append(f"reading the turns: {exc}")
            return problems
        finally:
            await store.close()

    if db != ":memory:" and not is_postgres_url(db) and not Path(db).expanduser().exists():
        print(
            f"database: {shown} does not exist yet (the first remember, import or serve creates it)"
        )
    else:
        try:
            problems = anyio.run(check_db)
        except (OSError, sqlite3.Error, SmartSearchError) as exc:
            problems = [str(exc)]
        if problems:
            ok = False
            print("database: PROBLEMS\n  " + "\n  ".join(problems))
            if not is_postgres_url(db):  # a server's message already says what to check
                print(
                    "  fix: restore from a backup or an export (smartsearch-mcp export / import), "
                    "or point --db at another file"
                )
        else:
            print("database: ok (integrity check passed, full-text index consistent)")

    if not args.skip_models:
        ok = _print_models(config) and ok
    print()
    print(client_config_text(db, config_option(args), _given_namespace(args), config))
    return 0 if ok else 1


def _print_models(config: Config) -> bool:
    from smartsearch_mcp.models import check_models, model_fixes

    statuses = check_models(config)
    print("models:")
    for status in statuses:
        mark = "ok  " if status.ok else "FAIL"
        if status.ok:
            detail = f"({status.load_seconds or 0:.1f}s) {status.message or ''}".rstrip()
        else:
            detail = f"— {status.message}"
        print(f"  [{mark}] {status.kind}: {status.name} {detail}")
    all_ok = all(s.ok for s in statuses)
    if not all_ok:
        print("  recall degrades to the models that load (see warnings in each result).")
        for fix in model_fixes(statuses):
            print(f"  fix: {fix}")
    return all_ok


def _cmd_models(args: argparse.Namespace, config: Config) -> int:
    if args.action == "download":
        from smartsearch_mcp.models import download_models

        for line in download_models(config):
            print(line)
        return 0
    return 0 if _print_models(config) else 1


def _cmd_install(args: argparse.Namespace, config: Config) -> int:
    """Write (or with `uninstall`, remove) the server entry and the capture hooks."""
    from datetime import datetime

    from smartsearch_mcp import install
    from smartsearch_mcp.namespaces import project_root

    removing = args.handler_name == "uninstall"
    project = project_root(Path.cwd()) if args.project else None
    paths = install.config_paths(args.client, Path.home(), project, sys.platform, dict(os.environ))
    db = args.db or os.environ.get("SMARTSEARCH_DB") or None
    explicit = _given_namespace(args)
    commands = None
    if not removing and project and db and _url_password(db):
        raise InputError(
            "install --project writes the database URL into files a project commits, and this "
            "URL holds a password: leave it out of the URL (PGPASSWORD or ~/.pgpass) or "
            "install without --project"
        )
    if not removing:
        preset = config_option(args)
        commands = install.Commands(
            server=server_command(
                db, preset, install.server_namespace(args.client, explicit, config)
            ),
            hook=[*executable(), "hook"],
            hook_options=_options(db, preset, explicit),
        )
    changes: list[install.Change] = []
    targets = install.plan(args.client, commands, paths, changes)
    install.apply(targets, changes, args.dry_run, datetime.now(), root=project)
    verb = "would be " if args.dry_run else ""
    for change in changes:
        print(f"{change.path}: {verb}{change.action}")
        for entry in change.entries:
            print(f"  {entry}")
        if change.backup:
            print(f"  backup: {change.backup}")
    if args.dry_run:
        print("dry run: nothing was written")
    elif any(c.entries for c in changes):
        print(f"restart {args.client} to load the change")
        if args.client == "codex" and not removing:
            print(
                "  Codex runs hooks when its hooks feature is on (older versions: "
                "[features] codex_hooks = true in config.toml)"
            )
    return 0


def _cmd_bench(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.bench.cli import run_bench

    return run_bench(args.bench_args, config, config_option(args))


# The commands whose configuration's models matter (see `load_config`).
_RANKING_COMMANDS = (
    _cmd_serve,
    _cmd_recall,
    _cmd_embed,
    _cmd_import,
    _cmd_doctor,
    _cmd_models,
    _cmd_install,
    _cmd_bench,
)


# ---------------------------------------------------------------------- helpers


def server_command(db: str | None, config: str | None, namespace: str | None) -> list[str]:
    """The absolute command line an MCP client should launch."""
    return [*executable(), "serve", *_options(db, config, namespace)]


def executable() -> list[str]:
    """This program as an absolute command: the console script, else `python -m`."""
    exe = shutil.which(APP_NAME)
    argv0 = Path(sys.argv[0])
    if argv0.name == APP_NAME and argv0.exists():
        exe = str(argv0.resolve())
    return [exe] if exe else [sys.executable, "-m", "smartsearch_mcp"]


def _options(db: str | None, config: str | None, namespace: str | None) -> list[str]:
    from smartsearch_mcp.store.postgres_url import is_postgres_url

    options: list[str] = []
    if db:
        kept = db == ":memory:" or is_postgres_url(db)  # a URL goes as given
        options += ["--db", db if kept else str(Path(db).expanduser().resolve())]
    if config:
        config_path = Path(config)
        options += ["--config", str(config_path.resolve()) if config_path.exists() else config]
    if namespace:
        options += ["--namespace", namespace]
    return options


def _url_password(db: str) -> bool:
    from smartsearch_mcp.store.postgres_url import is_postgres_url, passwords

    return is_postgres_url(db) and bool(passwords(db))


def _given_namespace(args: argparse.Namespace) -> str | None:
    """A namespace the user named (--namespace or $SMARTSEARCH_NAMESPACE): an installed
    server and hooks keep it; without one they apply the namespace rule where they run."""
    from smartsearch_mcp.namespaces import AUTO

    value = args.namespace or os.environ.get("SMARTSEARCH_NAMESPACE") or None
    return None if value is None or value.strip().lower() == AUTO else value


def client_config_text(
    db: str, config_name: str | None, namespace: str | None, config: Config
) -> str:
    """The snippets `install` would write, for adding the server by hand, with a database
    URL's password masked (the text is printed, and may be pasted into an issue)."""
    from smartsearch_mcp.install import server_namespace
    from smartsearch_mcp.store.postgres_url import MASK, mask_url

    secret = _url_password(db)
    db = mask_url(db) if secret else db

    def entry(client: str) -> str:
        command = server_command(db, config_name, server_namespace(client, namespace, config))
        return json.dumps(
            {"mcpServers": {"smartsearch": {"command": command[0], "args": command[1:]}}},
            indent=2,
        )

    command = server_command(db, config_name, server_namespace("claude-code", namespace, config))
    claude_code = "claude mcp add smartsearch -- " + " ".join(_quote(c) for c in command)
    return (
        f"Claude Desktop (claude_desktop_config.json):\n{entry('claude-desktop')}\n\n"
        f"Cursor (~/.cursor/mcp.json):\n{entry('cursor')}\n\n"
        f"Claude Code:\n  {claude_code}\n\n"
        "Without --namespace a server uses the namespace of the directory its client starts "
        f"it in: the git project there, else {config.scope.default_namespace!r}."
        + (
            f"\nThe database password is shown as {MASK}: write yours in its place, or leave it "
            "out of the URL and give it in PGPASSWORD or ~/.pgpass."
            if secret
            else ""
        )
    )


# The tools' argument names in messages shared with the MCP tools -> the CLI's wording.
_CLI_WORDS = (
    ("turns[0].role", "--role"),
    ("turns[0].speaker", "--speaker"),
    ("turns[0].timestamp", "--timestamp"),
    ("turns[0].text", "the note"),
    ("turns[0].metadata", "the note's metadata"),
    ("pass regex=false", "leave out --regex"),
    ("regex=false", "no --regex"),
    ("confirm=true", "--all --yes"),
    ("max_tokens", "--max-tokens"),
    ("limit must", "--limit must"),
    ("since must be earlier than until", "--since must be earlier than --until"),
    ("session_id", "--session-id"),
)


def _cli_wording(message: str) -> str:
    """`message` in the command line's words (its flags, not the tools' argument names)."""
    for tool, cli in _CLI_WORDS:
        message = message.replace(tool, cli)
    return message


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _quote(part: str) -> str:
    return f"'{part}'" if any(c in part for c in " \"'$") else part


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(disabled: bool, description: str, total: int | None = None) -> Any:
    if disabled:
        return _NoProgress()
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit=" turns", file=sys.stderr, disable=None)


if __name__ == "__main__":
    sys.exit(main())
