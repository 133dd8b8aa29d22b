"""Command line: serve | recall | grep | timeline | hook | install | uninstall | import |
export | stats | doctor | models | bench.

Environment variables are read here only: SMARTSEARCH_DB, SMARTSEARCH_CONFIG,
SMARTSEARCH_NAMESPACE, SMARTSEARCH_TOKEN. Logs go to stderr (stdout is the MCP wire in `serve`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import anyio

from smartsearch_mcp import __version__
from smartsearch_mcp.config import Config
from smartsearch_mcp.namespaces import AUTO, resolve_auto
from smartsearch_mcp.types import SmartSearchError

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
        return _cmd_hook(args)
    try:
        config = Config.load(args.config or os.environ.get("SMARTSEARCH_CONFIG") or None)
        result = args.handler(args, config)
        sys.stdout.flush()
    except SmartSearchError as exc:
        print(f"error: {exc}", file=sys.stderr)
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
    serve.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    serve.add_argument(
        "--token",
        default=None,
        help="HTTP bearer token clients must send (default: $SMARTSEARCH_TOKEN); "
        "required to bind beyond 127.0.0.1",
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow binding beyond 127.0.0.1 with no token (trusted networks only)",
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
        "--no-preload", action="store_true", help="load models on the first recall, not at start"
    )
    serve.set_defaults(handler=_cmd_serve)

    recall = sub.add_parser("recall", parents=[common], help="recall from memory")
    recall.add_argument("query")
    recall.add_argument("--max-tokens", type=int, default=None)
    recall.add_argument("--session-id", default=None)
    recall.add_argument("--since", default=None)
    recall.add_argument("--until", default=None)
    recall.add_argument("--json", action="store_true", help="print the structured result")
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
        "turns in the project's namespace. Always exits 0; problems go to hooks.log next to "
        "the database.",
    )
    hook.add_argument("client", choices=["claude-code", "codex"])
    hook.add_argument("event", choices=["user-prompt", "stop", "pre-compact"])
    hook.set_defaults(handler=_cmd_hook)

    imp = sub.add_parser("import", parents=[common], help="import conversations from a file")
    imp.add_argument("file")
    imp.add_argument(
        "--format",
        required=True,
        choices=["jsonl", "chatgpt", "claude", "claude-code"],
        dest="fmt",
        help="claude-code: a transcript .jsonl or a directory like ~/.claude/projects",
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
        help="database file (default: $SMARTSEARCH_DB, else the user data dir); ':memory:' works",
    )
    parser.add_argument(
        "--config",
        default=default,
        help="TOML config file or preset name in configs/ (e.g. offline)",
    )
    parser.add_argument(
        "--namespace",
        default=default,
        help="memory namespace, or 'auto' for the current project (default: "
        "$SMARTSEARCH_NAMESPACE; else the project for remember, recall, grep, timeline, "
        "forget and hooks, 'default' for the rest)",
    )
    parser.add_argument(
        "--log-level", default=default, help="debug, info, warning, error (default: warning)"
    )


def resolve_db(args: argparse.Namespace, config: Config) -> str:
    value = args.db or os.environ.get("SMARTSEARCH_DB") or config.store.path
    return value if value else str(default_db_path())


def resolve_namespace(args: argparse.Namespace, default: str | None = None) -> str | None:
    """--namespace, else $SMARTSEARCH_NAMESPACE, else `default`; "auto" is the project
    (git root, or working directory) of the current directory."""
    value = args.namespace or os.environ.get("SMARTSEARCH_NAMESPACE") or default
    return resolve_auto(value, Path.cwd())


# ---------------------------------------------------------------------- commands


def _cmd_serve(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.server import create_server, http_app

    access = None
    if args.http:
        from smartsearch_mcp.http_access import TOKEN_ENV, http_access

        # Checked before anything opens: a refused bind changes nothing.
        access = http_access(
            args.host,
            args.token or os.environ.get(TOKEN_ENV),
            insecure=args.insecure,
            extra_hosts=args.allowed_host,
            max_request_mb=args.max_request_mb,
        )
    db = resolve_db(args, config)
    server = create_server(
        config, db, namespace=resolve_namespace(args), preload_models=not args.no_preload
    )
    log.info("serving %s (config: %s)", db, config.source)
    if access is not None:
        import uvicorn

        app = http_app(server, access)
        # log_config=None: uvicorn logs through our stderr handler, access logs included.
        settings = uvicorn.Config(
            app, host=args.host, port=args.port, log_config=None, log_level=args.log_level
        )
        log.warning(
            "serving MCP over HTTP at http://%s:%d/mcp (%s)",
            args.host,
            args.port,
            "bearer token required" if access.token else "no token",
        )
        anyio.run(uvicorn.Server(settings).serve)
    else:
        anyio.run(server.run_stdio_async)
    return 0


async def _open_memory(
    args: argparse.Namespace, config: Config, default_namespace: str | None = None
) -> Any:
    from smartsearch_mcp.memory import Memory

    namespace = resolve_namespace(args, default_namespace)
    return await Memory.open(config, resolve_db(args, config), namespace)


def _on_project_memory(
    args: argparse.Namespace, config: Config, call: Callable[[Any], Awaitable[T]]
) -> T:
    """`call` on the memory of the command's namespace (the current project unless
    --namespace or $SMARTSEARCH_NAMESPACE says otherwise), closed afterwards."""

    async def run() -> T:
        memory = await _open_memory(args, config, AUTO)
        try:
            return await call(memory)
        finally:
            await memory.close()

    return anyio.run(run)


def _cmd_recall(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.output import format_recall, recall_output

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
    )
    if args.json:
        print(recall_output(result).model_dump_json(indent=2))
    else:
        print(format_recall(args.query, result))
    return 0


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
    )
    output = grep_output(result)
    print(output.model_dump_json(indent=2) if args.json else format_grep(output))
    return 0


def _cmd_timeline(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.output import format_timeline, timeline_output

    result = _on_project_memory(
        args,
        config,
        lambda memory: memory.timeline(
            since=args.since, until=args.until, session_id=args.session_id, limit=args.limit
        ),
    )
    output = timeline_output(result)
    print(output.model_dump_json(indent=2) if args.json else format_timeline(output))
    return 0


def _cmd_hook(args: argparse.Namespace) -> int:
    """Capture a hook event. Never fails the client's hook: exit code 0 whatever happens,
    problems logged to hooks.log in the data directory. Writes nothing to stdout (Claude
    Code adds a UserPromptSubmit hook's stdout to the model's context)."""
    from smartsearch_mcp.capture import (
        MAX_PAYLOAD_BYTES,
        capture_event,
        event_namespace,
        parse_event,
    )
    from smartsearch_mcp.store import SQLiteStore

    db = args.db or os.environ.get("SMARTSEARCH_DB") or ""
    log_file = Path(db).expanduser().parent if db and db != ":memory:" else default_db_path().parent
    handler = _hook_log_handler(log_file / "hooks.log")
    try:
        config = Config.load(args.config or os.environ.get("SMARTSEARCH_CONFIG") or None)
        db = resolve_db(args, config)
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        if len(raw) > MAX_PAYLOAD_BYTES:
            raise SmartSearchError(f"hook payload larger than {MAX_PAYLOAD_BYTES} bytes")
        event = parse_event(args.client, args.event, raw.decode("utf-8", "replace"))
        explicit = args.namespace or os.environ.get("SMARTSEARCH_NAMESPACE")
        if explicit and explicit.strip().lower() == AUTO:
            explicit = None
        namespace = event_namespace(event, explicit, os.getcwd())

        async def run() -> None:
            store = await SQLiteStore.open(
                db,
                busy_timeout_ms=config.store.busy_timeout_ms,
                max_turns_per_call=config.store.max_turns_per_call,
                max_text_chars=config.store.max_text_chars,
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

        anyio.run(run)
    except Exception:  # a hook must never fail the agent: record and carry on
        log.exception("hook %s %s failed", args.client, args.event)
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    return 0


def _hook_log_handler(path: Path) -> logging.Handler:
    """Log INFO and above to `path` (falling back to stderr when it cannot be opened)."""
    handler: logging.Handler
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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


def _cmd_import(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.importers import read_sessions

    path = Path(args.file)
    if not path.exists():
        raise SmartSearchError(f"{path}: no such file")

    async def run() -> int:
        memory = await _open_memory(args, config)
        stored = skipped = sessions = 0
        limit = config.store.max_turns_per_call
        try:
            progress = _progress(args.no_progress, f"importing {path.name}")
            explicit = resolve_namespace(args) if args.namespace else None
            for imported in read_sessions(path, args.fmt):
                # An explicit --namespace wins over one the file (or transcript) carries.
                namespace = explicit or imported.namespace or resolve_namespace(args)
                turns = imported.session.turns
                if not turns:
                    continue
                session_id = imported.session.session_id
                for start in range(0, len(turns), limit):
                    result = await memory.remember(
                        turns[start : start + limit], session_id=session_id, namespace=namespace
                    )
                    session_id = result.session_id
                    stored += result.stored
                    skipped += result.duplicates_skipped
                    progress.update(len(turns[start : start + limit]))
                sessions += 1
            progress.close()
        finally:
            await memory.close()
        print(
            f"imported {stored} turns in {sessions} sessions "
            f"({skipped} duplicates skipped) into {memory.store.path}",
            file=sys.stderr,
        )
        if stored and memory.pipeline.embedding_variants():
            print(
                "dense ranking needs the new turns embedded: a running server does it in the "
                "background; `smartsearch-mcp embed` does it now (recall works meanwhile, "
                "ranking them by lexical signals)",
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
                    f"nothing to embed: config {config.source} uses no bi-encoder, or it "
                    "cannot be loaded (see `smartsearch-mcp models`)",
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


def _cmd_export(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.store import SQLiteStore

    async def run() -> int:
        db = resolve_db(args, config)
        if db != ":memory:" and not Path(db).exists():
            raise SmartSearchError(f"no database at {db}; nothing to export")
        source = await SQLiteStore.open(db, busy_timeout_ms=config.store.busy_timeout_ms)
        with tempfile.TemporaryDirectory() as tmp:
            snapshot_path = Path(tmp) / "snapshot.db"
            try:
                await source.backup(snapshot_path)  # consistent even while a server writes
            finally:
                await source.close()
            snapshot = await SQLiteStore.open(snapshot_path)
            namespace = (
                None if args.all else (resolve_namespace(args) or config.scope.default_namespace)
            )
            count = 0
            with contextlib.ExitStack() as stack:
                out = (
                    sys.stdout
                    if args.output == "-"
                    else stack.enter_context(open(args.output, "w", encoding="utf-8"))
                )
                try:
                    async for turn in snapshot.iter_turns(namespace):
                        out.write(json.dumps(asdict(turn), ensure_ascii=False) + "\n")
                        count += 1
                finally:
                    await snapshot.close()
        print(f"exported {count} turns", file=sys.stderr)
        return 0

    return anyio.run(run)


def _cmd_stats(args: argparse.Namespace, config: Config) -> int:
    async def run() -> int:
        memory = await _open_memory(args, config)
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
            print(f"turns: {stats.turns} in {stats.sessions} sessions")
            print(f"dates: {stats.first_timestamp or '-'} .. {stats.last_timestamp or '-'}")
            for ns, count in stats.namespaces.items():
                print(f"  namespace {ns}: {count} turns")
        return 0

    return anyio.run(run)


def _cmd_doctor(args: argparse.Namespace, config: Config) -> int:
    from smartsearch_mcp.store import SQLiteStore

    ok = True
    db = resolve_db(args, config)
    print(f"smartsearch-mcp {__version__}; python {sys.version.split()[0]}")
    print(f"config: {config.source}")

    async def check_db() -> list[str]:
        store = await SQLiteStore.open(db, busy_timeout_ms=config.store.busy_timeout_ms)
        try:
            stats = await store.stats()
            print(f"database: {db} — {stats.turns} turns, schema v{stats.schema_version}")
            return await store.integrity_check()
        finally:
            await store.close()

    try:
        problems = anyio.run(check_db)
    except (OSError, SmartSearchError) as exc:
        problems = [str(exc)]
    if problems:
        ok = False
        print("database: PROBLEMS\n  " + "\n  ".join(problems))
        print(
            "  fix: restore from an export (smartsearch-mcp export / import), or point --db "
            "at another file"
        )
    else:
        print("database: ok (integrity check passed, full-text index consistent)")

    if not args.skip_models:
        ok = _print_models(config) and ok
    print()
    print(client_config_text(db, args.config, resolve_namespace(args)))
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
    usable = any(s.ok for s in statuses)
    if not all(s.ok for s in statuses):
        print("  recall degrades to the models that load (see warnings in each result).")
        for fix in model_fixes(statuses):
            print(f"  fix: {fix}")
    return usable


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
    explicit = args.namespace or os.environ.get("SMARTSEARCH_NAMESPACE") or None
    server_namespace = explicit or (
        config.scope.global_namespace if args.client == "claude-desktop" else AUTO
    )
    commands = None
    if not removing:
        commands = install.Commands(
            server=server_command(db, args.config, server_namespace),
            hook=[*executable(), "hook"],
            hook_options=_options(db, args.config, explicit),
        )
    changes: list[install.Change] = []
    targets = install.plan(args.client, commands, paths, changes)
    install.apply(targets, changes, args.dry_run, datetime.now())
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

    return run_bench(args.bench_args, config, args.config)


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
    options: list[str] = []
    if db:
        options += ["--db", str(Path(db).expanduser().resolve()) if db != ":memory:" else db]
    if config:
        config_path = Path(config)
        options += ["--config", str(config_path.resolve()) if config_path.exists() else config]
    if namespace:
        options += ["--namespace", namespace]
    return options


def client_config_text(db: str, config: str | None, namespace: str | None) -> str:
    command = server_command(db, config, namespace)
    entry = {"command": command[0], "args": command[1:]}
    desktop = json.dumps({"mcpServers": {"smartsearch": entry}}, indent=2)
    claude_code = "claude mcp add smartsearch -- " + " ".join(_quote(c) for c in command)
    return (
        "Claude Desktop (claude_desktop_config.json) and Cursor (~/.cursor/mcp.json):\n"
        f"{desktop}\n\nClaude Code:\n  {claude_code}"
    )


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
