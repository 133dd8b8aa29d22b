"""`hook`: a client's hook (Claude Code, Codex) stores the conversation, and on a user prompt
prints the past turns worth adding to the agent's context. Runs on every prompt: it imports
little, and never fails the client's hook (exit 0; problems go to hooks.log)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import default_db_path, load_config, resolve_db
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import SmartSearchError

if TYPE_CHECKING:
    from smartsearch_mcp.capture import HookEvent
    from smartsearch_mcp.inject import Gate, Injection, PendingInjection

log = logging.getLogger("smartsearch_mcp")


def add_options(hook: argparse.ArgumentParser) -> None:
    """The options of `hook`."""
    hook.add_argument("client", choices=["claude-code", "codex"])
    hook.add_argument("event", choices=["user-prompt", "stop", "pre-compact"])
    hook.add_argument(
        "--no-inject",
        action="store_true",
        help="user-prompt: only store the prompt, add no past turns to the agent's context "
        "(see [inject] in the config)",
    )


def run(args: argparse.Namespace) -> int:
    """Capture the hook's event; leave at once (not waiting for it) when a recall for the
    context went past its time limit."""
    code = capture(args)
    from smartsearch_mcp.inject import abandoned

    if abandoned():  # a recall past its time limit: leave now, do not wait for it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def capture(args: argparse.Namespace) -> int:
    """Capture a hook event. Never fails the client's hook: exit code 0 whatever happens,
    problems logged to hooks.log in the data directory. Writes to stdout only what a
    user-prompt hook injects (smartsearch_mcp.inject), after the prompt is stored: the
    client adds it to the model's context."""
    from smartsearch_mcp.capture import MAX_PAYLOAD_BYTES, event_namespace, parse_event
    from smartsearch_mcp.postgres_url import is_postgres_url

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

        began = datetime.now(UTC)
        wants_context = config.inject.enabled and not getattr(args, "no_inject", False)
        if args.event == "user-prompt" and _captured_by_server(
            config, db, event, namespace, began, wants_context
        ):
            return 0
        started = None
        if args.event == "user-prompt" and event.prompt and wants_context:
            started = _start_injection(config, db, event, event.prompt, namespace, began)
        ok = False
        try:
            stored = _store(db, config, event, namespace)
            ok = True
        finally:
            if started is not None:
                started[1].open(ok)
        log.info(
            "hook %s %s: stored %d turn%s in %s / %s",
            args.client,
            args.event,
            stored,
            "" if stored == 1 else "s",
            namespace,
            event.session_id,
        )
        if started is not None:
            _print_injection(event, started[0])
    except SmartSearchError as exc:  # e.g. a database that cannot be opened: one clear line
        log.error("hook %s %s failed: %s", args.client, args.event, exc)
    except sqlite3.Error as exc:  # e.g. corruption met while storing
        from smartsearch_mcp.store import describe_database
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


def _captured_by_server(
    config: Config, db: str, event: HookEvent, namespace: str, began: datetime, inject: bool
) -> bool:
    """Whether the server running on `db` (with these settings) stored the prompt hook's
    `event`; if so, what it chose to inject is printed (when `inject`). No server, or one
    that did not store it within the time limit: False, and the hook stores it itself. This
    process then imports neither the store nor a tokenizer: a prompt waits for this hook."""
    from smartsearch_mcp.dates import format_timestamp
    from smartsearch_mcp.inject import Injection, injection_from_json
    from smartsearch_mcp.recall_socket import capture_on_server

    until = format_timestamp(began)
    limit = config.inject.time_limit_s
    try:
        served = capture_on_server(db, config, event, namespace, until, inject, limit)
    except Exception:  # the hook stores the prompt itself
        log.exception("hook %s user-prompt: asking the running server failed", event.client)
        return False
    if served is None:
        return False
    log.info(
        "hook %s user-prompt: stored %d turn%s in %s / %s (by the server, pid %d)",
        event.client,
        served.stored,
        "" if served.stored == 1 else "s",
        namespace,
        event.session_id,
        served.pid,
    )
    if inject:
        chosen = injection_from_json(served.injection, "server")
        _print(event, chosen or Injection("", [], 0, "none from the server", "server"))
    return True


def _store(db: str, config: Config, event: HookEvent, namespace: str) -> int:
    """`event` stored by this process; the turns stored."""
    import anyio

    from smartsearch_mcp.capture import capture_into_database

    return anyio.run(capture_into_database, db, config.store, event, namespace)


def _start_injection(
    config: Config, db: str, event: HookEvent, prompt: str, namespace: str, began: datetime
) -> tuple[PendingInjection, Gate] | None:
    """Start the recall for `prompt`, the prompt of `event`, while the prompt is stored (see
    smartsearch_mcp.inject), and the gate to open once it is; None (logged) when it cannot
    start: the prompt is stored all the same."""
    try:
        from smartsearch_mcp.capture import session_key
        from smartsearch_mcp.inject import Gate, start_injection

        gate = Gate()
        pending = start_injection(config, db, prompt, session_key(event), namespace, began, gate)
    except Exception:  # the prompt is stored whatever happens to the recall
        log.exception("hook %s user-prompt: the recall for the prompt did not start", event.client)
        return None
    return pending, gate


def _print_injection(event: HookEvent, pending: PendingInjection) -> None:
    """Print the past turns worth adding to the agent's context for the prompt of `event`
    (nothing when none clears the bar or the recall is over its time limit)."""
    _print(event, pending.finish())


def _print(event: HookEvent, injection: Injection) -> None:
    """Log what is injected for the prompt of `event` and why; print it, if anything."""
    from smartsearch_mcp.inject import hook_output

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
    from smartsearch_mcp.paths import make_private_dir

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


HOOK = Command(
    "hook",
    help="capture a conversation from a client hook (JSON payload on stdin)",
    description="Run by a client's hook: reads the hook's JSON from stdin and stores the "
    "turns in the project's namespace; on user-prompt, then prints the past turns the "
    "ranking is sure of for the agent's context ([inject] in the config). Always exits "
    "0; problems go to hooks.log next to the database.",
    add_options=add_options,
    run_unguarded=run,
)
