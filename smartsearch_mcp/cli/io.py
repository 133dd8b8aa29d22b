"""Memory in and out: `import` (conversation exports, transcripts, JSONL), `export` (JSONL),
`migrate` (to another database)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.progress import progress_bar
from smartsearch_mcp.cli.settings import open_memory, resolve_db, resolve_namespace
from smartsearch_mcp.cli.wording import plural
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError, SmartSearchError


def add_import_options(imp: argparse.ArgumentParser) -> None:
    """The options of `import`."""
    imp.add_argument("file")
    imp.add_argument(
        "--format",
        choices=["jsonl", "chatgpt", "claude", "claude-code"],
        dest="fmt",
        help="default: told from the file's contents; claude-code: a transcript .jsonl or a "
        "directory like ~/.claude/projects",
    )
    imp.add_argument("--no-progress", action="store_true")


def import_file(args: argparse.Namespace, config: Config) -> int:
    """Import the sessions of the file: all checked first, then stored (see importing.py)."""
    from smartsearch_mcp.importers import read_sessions
    from smartsearch_mcp.importers.detect import detect_format
    from smartsearch_mcp.importing import plan_import, store_import

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
        memory = await open_memory(args, config)
        try:
            explicit = resolve_namespace(args, config) if args.namespace else None
            plan = plan_import(memory, read_sessions(path, fmt), explicit, memory.namespace)
            progress = progress_bar(args.no_progress, f"importing {path.name}")
            totals = await store_import(memory, plan, progress.update)
            progress.close()
        finally:
            await memory.close()
        print(
            f"imported {plural(totals.stored, 'turn')} in {plural(totals.sessions, 'session')} "
            f"({plural(totals.skipped, 'duplicate')} skipped) into {memory.store.path}, "
            + namespaces_filled(totals.filled)
            + (
                f"; {plural(totals.redacted, 'secret')} stored as [REDACTED:…]"
                if totals.redacted
                else ""
            )
            + (
                f"; {plural(totals.dated, 'turn')} without a timestamp dated now, when imported"
                if totals.dated
                else ""
            ),
            file=sys.stderr,
        )
        if totals.stored and memory.pipeline.indexes_in_background():
            print(
                "the rankers need the new turns' vectors: a running server computes them in "
                "the background; `smartsearch-mcp embed` does it now (recall works meanwhile, "
                "computing what it can of them itself and ranking the rest by lexical "
                "signals)",
                file=sys.stderr,
            )
        return 0

    return anyio.run(run)


def namespaces_filled(filled: dict[str, int]) -> str:
    """ "namespace 'a'", or "namespaces 'a' (3 turns), 'b' (1 turn)" for an import's summary."""
    if not filled:
        return "no namespace (no turns)"
    if len(filled) == 1:
        return f"namespace {next(iter(filled))!r}"
    shown = sorted(filled.items(), key=lambda item: -item[1])[:5]
    more = f" and {len(filled) - 5} more" if len(filled) > 5 else ""
    return "namespaces " + ", ".join(f"{n!r} ({plural(c, 'turn')})" for n, c in shown) + more


def add_export_options(exp: argparse.ArgumentParser) -> None:
    """The options of `export`."""
    exp.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    exp.add_argument("--all", action="store_true", help="every namespace, not only one")


def export(args: argparse.Namespace, config: Config) -> int:
    """Write the turns of the namespace (or --all) as JSONL, from one consistent snapshot."""
    import contextlib
    from typing import IO

    from smartsearch_mcp.export import export_turns, private_file, read_snapshot
    from smartsearch_mcp.memory import elsewhere_hint

    async def run() -> int:
        db = resolve_db(args, config)
        async with read_snapshot(db, config.store.busy_timeout_ms) as snapshot:
            namespace = None if args.all else resolve_namespace(args, config)
            with contextlib.ExitStack() as stack:
                out: IO[str] = (
                    sys.stdout
                    if args.output == "-"
                    else stack.enter_context(private_file(args.output))
                )
                result = await export_turns(snapshot, namespace, out)
        hint = None
        if result.namespaces is not None and namespace is not None:
            hint = elsewhere_hint(result.namespaces, [namespace])
        where = "" if namespace is None else f" from namespace {namespace!r}"
        print(f"exported {plural(result.count, 'turn')}{where}", file=sys.stderr)
        if hint:
            print(f"note: {hint.replace('to search', 'to export (or --all)')}", file=sys.stderr)
        return 0

    return anyio.run(run)


def add_migrate_options(move: argparse.ArgumentParser) -> None:
    """The options of `migrate`."""
    move.add_argument("--from", dest="source", required=True, help="database to copy from")
    move.add_argument("--to", dest="target", required=True, help="database to copy into")
    move.add_argument("--batch", type=int, default=5000, help="rows per transaction")


def migrate(args: argparse.Namespace, config: Config) -> int:
    """Copy the memory of --from into --to, verified (see store/transfer.py)."""
    from smartsearch_mcp.store import describe_database
    from smartsearch_mcp.store.transfer import migrate_memory

    if args.batch < 1:
        raise InputError("--batch must be at least 1")
    if args.source == args.target:
        raise InputError("--from and --to name the same database")
    migration = anyio.run(migrate_memory, args.source, args.target, config.store, args.batch)
    report = migration.report
    copied = ", ".join(f"{report.copied[t]} {t}" for t in report.copied)
    counted = ", ".join(f"{report.target[t]} {t}" for t in report.target)
    print(
        f"migrated {describe_database(args.source)} -> {describe_database(args.target)}: "
        f"copied {copied}; verified: both hold {counted}",
        file=sys.stderr,
    )
    if migration.redacted:
        print(
            f"secrets replaced by [REDACTED:…] in {plural(migration.redacted, 'turn')} of the "
            "copy (the source holds them as stored: `smartsearch-mcp redact --apply` there; "
            "store.redact_secrets = false keeps them)",
            file=sys.stderr,
        )
    return 0


IMPORT = Command(
    "import",
    help="import conversations from a file",
    add_options=add_import_options,
    run=import_file,
    ranks=True,
    input_error_exit=1,  # the file holds the bad value
)
EXPORT = Command("export", help="export turns as JSONL", add_options=add_export_options, run=export)
MIGRATE = Command(
    "migrate",
    help="copy a memory to another database (SQLite <-> PostgreSQL), resumable, verified",
    add_options=add_migrate_options,
    run=migrate,
)
