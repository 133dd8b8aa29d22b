"""`doctor` (the database, the models, the client config to paste) and `models` (list or
download the configured models)."""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

import anyio

from smartsearch_mcp import __version__
from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import (
    config_option,
    given_namespace,
    namespace_choice,
    resolve_db,
)
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import SmartSearchError


def add_doctor_options(doctor: argparse.ArgumentParser) -> None:
    """The options of `doctor`."""
    doctor.add_argument("--skip-models", action="store_true", help="do not try loading models")


def doctor(args: argparse.Namespace, config: Config) -> int:
    """Report on the database (read-only) and the models; print the client config. Exit 1
    when something is wrong."""
    from smartsearch_mcp.launch import client_config_text
    from smartsearch_mcp.store import describe_database, is_postgres_url
    from smartsearch_mcp.store.health import check_database

    ok = True
    db = resolve_db(args, config)
    shown = describe_database(db)
    print(f"smartsearch-mcp {__version__}; python {sys.version.split()[0]}")
    print(f"config: {config.source}")
    print(f"namespace here: {namespace_choice(args, config).describe()}")

    if db != ":memory:" and not is_postgres_url(db) and not Path(db).expanduser().exists():
        print(
            f"database: {shown} does not exist yet (the first remember, import or serve creates it)"
        )
    else:
        try:
            health = anyio.run(check_database, db, config.store.busy_timeout_ms)
            if health.stats is not None:
                print(
                    f"database: {shown} — {health.stats.turns} turns, "
                    f"schema v{health.stats.schema_version}"
                )
            problems = health.problems
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
        ok = print_models(config) and ok
    print()
    print(client_config_text(db, config_option(args), given_namespace(args), config))
    return 0 if ok else 1


def print_models(config: Config) -> bool:
    """Load each configured model and say how it went; whether all loaded."""
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


def add_models_options(models: argparse.ArgumentParser) -> None:
    """The options of `models`."""
    models.add_argument("action", nargs="?", choices=["list", "download"], default="list")


def models(args: argparse.Namespace, config: Config) -> int:
    """List the configured models (loading each), or download them."""
    if args.action == "download":
        from smartsearch_mcp.models import download_models

        for line in download_models(config):
            print(line)
        return 0
    return 0 if print_models(config) else 1


DOCTOR = Command(
    "doctor",
    help="check the database and models; print client config",
    add_options=add_doctor_options,
    run=doctor,
    ranks=True,
)
MODELS = Command(
    "models",
    help="list the configured models",
    add_options=add_models_options,
    run=models,
    ranks=True,
)
