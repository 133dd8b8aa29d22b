"""The top-level parser, built from the command modules, and the dispatcher: logging to
stderr (stdout is the MCP wire in `serve`), the config loaded, and a command's errors turned
into one `error: …` line and its exit code."""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from collections.abc import Sequence

from smartsearch_mcp import __version__
from smartsearch_mcp.cli import (
    bench,
    doctor,
    embed,
    hooks,
    install,
    io,
    memory_admin,
    recall,
    redact,
    serve,
    ui,
)
from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import add_common_options, load_config
from smartsearch_mcp.cli.wording import cli_wording
from smartsearch_mcp.paths import APP_NAME
from smartsearch_mcp.types import InputError, SmartSearchError

# In the order `--help` lists them.
COMMANDS: tuple[Command, ...] = (
    serve.SERVE,
    recall.RECALL,
    memory_admin.REMEMBER,
    memory_admin.FORGET,
    redact.REDACT,
    memory_admin.GREP,
    memory_admin.TIMELINE,
    hooks.HOOK,
    io.IMPORT,
    embed.EMBED,
    io.EXPORT,
    io.MIGRATE,
    memory_admin.STATS,
    doctor.DOCTOR,
    doctor.MODELS,
    install.INSTALL,
    install.UNINSTALL,
    ui.UI,
    bench.BENCH,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `smartsearch-mcp` with `argv` (default: the process's); the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    command: Command | None = getattr(args, "command", None)
    if command is None:
        parser.print_help(sys.stderr)
        return 2
    if command.run_unguarded is not None:
        return command.run_unguarded(args)
    assert command.run is not None
    try:
        config = load_config(args)
        result = command.run(args, config)
        sys.stdout.flush()
    except InputError as exc:
        print(f"error: {cli_wording(str(exc))}", file=sys.stderr)
        return command.input_error_exit
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
    """The parser of every command; each command module defines its own options."""
    parser = argparse.ArgumentParser(
        prog=APP_NAME, description="SmartSearch long-term memory for MCP agents."
    )
    add_common_options(parser, argparse.SUPPRESS)
    parser.set_defaults(db=None, config=None, namespace=None, log_level="warning")
    # Subcommands accept the same options after their name; SUPPRESS keeps a value given
    # before the subcommand from being reset to a default.
    common = argparse.ArgumentParser(add_help=False)
    add_common_options(common, argparse.SUPPRESS)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.add_to(commands, common)
    return parser
