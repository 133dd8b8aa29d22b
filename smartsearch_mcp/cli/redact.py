"""`redact`: find the secrets stored by earlier releases (or with redaction off) and, with
--apply, replace them by [REDACTED:kind] placeholders."""

from __future__ import annotations

import argparse
import sys

import anyio

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import resolve_db, resolve_namespace
from smartsearch_mcp.cli.wording import plural
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError


def add_options(redact: argparse.ArgumentParser) -> None:
    """The options of `redact`."""
    redact.add_argument(
        "--scan", action="store_true", help="only report what is found (what it does by default)"
    )
    redact.add_argument(
        "--apply", action="store_true", help="rewrite those turns (asks first; then VACUUM)"
    )
    redact.add_argument("--yes", action="store_true", help="do not ask before --apply")


def run(args: argparse.Namespace, config: Config) -> int:
    """Scan every stored turn (of --namespace, else of every namespace) for secrets; with
    --apply (not with --scan), rewrite the turns that hold some. Prints kinds, counts and
    turn ids, never a secret."""
    from smartsearch_mcp.store import SQLiteStore, open_store
    from smartsearch_mcp.store.secrets import stored_secrets

    async def scan() -> int:
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
            print(f"scanned {plural(scanned, 'turn')} of {where} in {store.path}")
            if not found:
                print("no secrets found")
                return 0
            print(
                f"{plural(sum(kinds.values()), 'secret')} in {plural(len(found), 'turn')}: "
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
                answer = input(f"rewrite {plural(len(found), 'turn')}? [y/N] ")
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
                f"rewrote {plural(rewritten, 'turn')} in one transaction and {where_gone} "
                "(not from backups, exports or copies made before); restart running servers "
                "so that their caches drop it; `smartsearch-mcp embed` recomputes the vectors"
            )
            return 0
        finally:
            await store.close()

    return anyio.run(scan)


REDACT = Command(
    "redact",
    help="find secrets stored by earlier releases (or with redaction off); --apply "
    "replaces them by [REDACTED:kind] placeholders",
    add_options=add_options,
    run=run,
)
