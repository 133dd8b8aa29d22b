"""The memory's own tools on the command line: `remember`, `forget`, `grep`, `timeline`, and
`stats` (what is stored)."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING

import anyio

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import (
    namespace_choice,
    on_project_memory,
    open_memory,
    resolve_db,
    say_namespace,
)
from smartsearch_mcp.cli.wording import plural
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError

if TYPE_CHECKING:
    from smartsearch_mcp.memory import Memory
    from smartsearch_mcp.types import ForgetResult


def add_remember_options(remember: argparse.ArgumentParser) -> None:
    """The options of `remember`."""
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


def remember(args: argparse.Namespace, config: Config) -> int:
    """Store the note (the argument, else stdin) verbatim."""
    from smartsearch_mcp.types import TurnInput

    text = args.text
    if text is None or text == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise InputError("give the note as an argument, or pipe it on stdin")
        text = sys.stdin.read().removesuffix("\n").removesuffix("\r")
    if not text.strip():
        raise InputError("the note is empty; nothing was stored")
    turn = TurnInput(text=text, speaker=args.speaker, role=args.role, timestamp=args.timestamp)
    result = on_project_memory(
        args, config, lambda memory: memory.remember([turn], session_id=args.session_id)
    )
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    elif result.stored:
        print(
            f"Remembered as turn {result.ids[0]} in namespace {result.namespace!r} "
            f"(session {result.session_id})."
            + (
                f" {plural(result.secrets_redacted, 'secret')} in it stored as [REDACTED:…]."
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


def add_forget_options(forget: argparse.ArgumentParser) -> None:
    """The options of `forget`."""
    forget.add_argument(
        "--id", type=int, action="append", dest="ids", metavar="ID", help="a turn id (repeatable)"
    )
    forget.add_argument("--session-id", default=None, help="every turn of this session")
    forget.add_argument(
        "--all", action="store_true", dest="whole", help="the whole namespace (with --yes)"
    )
    forget.add_argument("--yes", action="store_true", help="confirm --all")
    forget.add_argument("--json", action="store_true", help="print the structured result")


def forget(args: argparse.Namespace, config: Config) -> int:
    """Delete the turns named, a session, or (with --yes) the whole namespace."""
    if args.whole and (args.ids or args.session_id):
        raise InputError("--all deletes the whole namespace: give it without --id/--session-id")
    if not (args.whole or args.ids or args.session_id):
        raise InputError("say what to delete: --id ID (repeatable), --session-id ID, or --all")
    from pathlib import Path

    from smartsearch_mcp.postgres_url import is_postgres_url
    from smartsearch_mcp.store.sqlite import missing_database

    db = resolve_db(args, config)
    if db != ":memory:" and not is_postgres_url(db) and not Path(db).exists():
        raise missing_database(db)  # deleting from nothing must not create a database

    async def delete(memory: Memory) -> ForgetResult:
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

    result = on_project_memory(args, config, delete)
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    elif result.deleted_turn_ids:
        print(
            f"Deleted {len(result.deleted_turn_ids)} turn(s) from namespace {result.namespace!r}."
        )
    else:
        print(f"Nothing matched in namespace {result.namespace!r}; nothing deleted.")
    return 0


def add_grep_options(grep: argparse.ArgumentParser) -> None:
    """The options of `grep`."""
    grep.add_argument("pattern")
    grep.add_argument("--regex", action="store_true", help="PATTERN is a regular expression")
    grep.add_argument("--limit", type=int, default=None, help="most turns to show (max 500)")
    grep.add_argument("--session-id", default=None)
    grep.add_argument("--json", action="store_true", help="print the structured result")


def grep(args: argparse.Namespace, config: Config) -> int:
    """Print the turns holding the text (or matching the regex)."""
    from smartsearch_mcp.output import format_grep, grep_output

    result = on_project_memory(
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
        say_namespace(args, config)
    return 0


def add_timeline_options(timeline: argparse.ArgumentParser) -> None:
    """The options of `timeline`."""
    timeline.add_argument("--since", default=None, help="a date, or e.g. yesterday, last week")
    timeline.add_argument("--until", default=None, help="a date, or e.g. yesterday")
    timeline.add_argument("--session-id", default=None)
    timeline.add_argument("--limit", type=int, default=None, help="most turns (max 500)")
    timeline.add_argument("--json", action="store_true", help="print the structured result")


def timeline(args: argparse.Namespace, config: Config) -> int:
    """Print the turns in time order."""
    from smartsearch_mcp.output import format_timeline, timeline_output

    result = on_project_memory(
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
        say_namespace(args, config)
    return 0


def add_stats_options(stats: argparse.ArgumentParser) -> None:
    """The options of `stats`."""
    stats.add_argument("--json", action="store_true")


def stats(args: argparse.Namespace, config: Config) -> int:
    """Print what is stored: the database, turns, dates and namespaces."""
    from smartsearch_mcp.memory import elsewhere_hint

    async def run() -> int:
        memory = await open_memory(args, config, read_only=True)
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
            print(f"turns: {stats.turns} in {plural(stats.sessions, 'session')}")
            print(f"dates: {stats.first_timestamp or '-'} .. {stats.last_timestamp or '-'}")
            for ns, count in stats.namespaces.items():
                here = "  (this directory's)" if ns == memory.namespace else ""
                print(f"  namespace {ns}: {plural(count, 'turn')}{here}")
            choice = namespace_choice(args, config)
            print(f"this directory uses {choice.describe()}")
            if hint := elsewhere_hint(stats.namespaces, [memory.namespace]):
                print(f"note: {hint}")
        return 0

    return anyio.run(run)


REMEMBER = Command(
    "remember",
    help="store a note verbatim (the remember tool)",
    add_options=add_remember_options,
    run=remember,
)
FORGET = Command(
    "forget",
    help="delete turns permanently (the forget tool)",
    add_options=add_forget_options,
    run=forget,
)
GREP = Command(
    "grep",
    help="find turns containing exact text (or a regex)",
    add_options=add_grep_options,
    run=grep,
)
TIMELINE = Command(
    "timeline", help="turns in time order", add_options=add_timeline_options, run=timeline
)
STATS = Command("stats", help="what is stored", add_options=add_stats_options, run=stats)
