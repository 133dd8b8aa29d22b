"""The options every command takes (--db, --config, --namespace, --log-level) and what they
resolve to, with the environment variables behind them: SMARTSEARCH_DB, SMARTSEARCH_CONFIG,
SMARTSEARCH_NAMESPACE. Environment variables are read in the command line only."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from smartsearch_mcp.config import Config
from smartsearch_mcp.namespaces import NamespaceChoice, choose_namespace
from smartsearch_mcp.paths import APP_NAME

if TYPE_CHECKING:
    from smartsearch_mcp.memory import Memory

log = logging.getLogger("smartsearch_mcp")

T = TypeVar("T")


def default_db_path() -> Path:
    """The database in the platform's user data dir (e.g. ~/.local/share/smartsearch-mcp)."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "memory.db"


def add_common_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """--db, --config, --namespace and --log-level, each defaulting to `default`."""
    parser.add_argument(
        "--db",
        default=default,
        help="database file, or a postgresql://user@host/dbname URL for a memory a team shares "
        "(default: $SMARTSEARCH_DB, else the user data dir); ':memory:' works",
    )
    parser.add_argument(
        "--config",
        default=default,
        help="a preset (offline, offline-mpnet, default, lexical) or a TOML file "
        "(default: $SMARTSEARCH_CONFIG, else the preset that can run here; see doctor)",
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
    command = getattr(args, "command", None)
    if command is None or not command.ranks:
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
    """--db, else $SMARTSEARCH_DB, else store.path, else the user data dir's database."""
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


def given_namespace(args: argparse.Namespace) -> str | None:
    """A namespace the user named (--namespace or $SMARTSEARCH_NAMESPACE): an installed
    server and hooks keep it; without one they apply the namespace rule where they run."""
    from smartsearch_mcp.namespaces import AUTO

    value = args.namespace or os.environ.get("SMARTSEARCH_NAMESPACE") or None
    return None if value is None or value.strip().lower() == AUTO else value


async def open_memory(args: argparse.Namespace, config: Config, read_only: bool = False) -> Memory:
    """The command's memory; `read_only` for commands that only read (the database must
    exist then, and nothing is written to it)."""
    from smartsearch_mcp.memory import Memory

    namespace = resolve_namespace(args, config)
    return await Memory.open(config, resolve_db(args, config), namespace, read_only=read_only)


def on_project_memory(
    args: argparse.Namespace,
    config: Config,
    call: Callable[[Memory], Awaitable[T]],
    read_only: bool = False,
) -> T:
    """`call` on the memory of the command's namespace (`namespace_choice`), closed
    afterwards."""

    async def run() -> T:
        memory = await open_memory(args, config, read_only=read_only)
        try:
            return await call(memory)
        finally:
            await memory.close()

    import anyio

    return anyio.run(run)


def say_namespace(args: argparse.Namespace, config: Config) -> None:
    """Which namespace was searched and why, on stderr (stdout stays the answer)."""
    sys.stdout.flush()
    print(f"searched {namespace_choice(args, config).describe()}", file=sys.stderr)
