"""`install` and `uninstall`: add (or remove) the MCP server and the capture hooks in a
client's config files (see smartsearch_mcp.install)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.settings import config_option, given_namespace
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError


def add_options(command: argparse.ArgumentParser) -> None:
    """The options of `install` and `uninstall`."""
    command.add_argument("client", choices=["claude-code", "claude-desktop", "cursor", "codex"])
    command.add_argument(
        "--project",
        action="store_true",
        help="the current project's config files instead of the user's",
    )
    command.add_argument("--dry-run", action="store_true", help="show, write nothing")


def install(args: argparse.Namespace, config: Config) -> int:
    """Write the server entry and the capture hooks."""
    return _change_client(args, config, removing=False)


def uninstall(args: argparse.Namespace, config: Config) -> int:
    """Remove the server entry and the capture hooks."""
    return _change_client(args, config, removing=True)


def _change_client(args: argparse.Namespace, config: Config, removing: bool) -> int:
    from datetime import datetime

    from smartsearch_mcp import install as client_files
    from smartsearch_mcp.launch import command_options, executable, server_command, url_has_password
    from smartsearch_mcp.namespaces import project_root

    project = project_root(Path.cwd()) if args.project else None
    paths = client_files.config_paths(
        args.client, Path.home(), project, sys.platform, dict(os.environ)
    )
    db = args.db or os.environ.get("SMARTSEARCH_DB") or None
    explicit = given_namespace(args)
    commands = None
    if not removing and project and db and url_has_password(db):
        raise InputError(
            "install --project writes the database URL into files a project commits, and this "
            "URL holds a password: leave it out of the URL (PGPASSWORD or ~/.pgpass) or "
            "install without --project"
        )
    if not removing:
        preset = config_option(args)
        commands = client_files.Commands(
            server=server_command(
                db, preset, client_files.server_namespace(args.client, explicit, config)
            ),
            hook=[*executable(), "hook"],
            hook_options=command_options(db, preset, explicit),
        )
    changes: list[client_files.Change] = []
    targets = client_files.plan(args.client, commands, paths, changes)
    client_files.apply(targets, changes, args.dry_run, datetime.now(), root=project)
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


INSTALL = Command(
    "install",
    help="add the MCP server (and capture hooks) in a client's config",
    add_options=add_options,
    run=install,
    ranks=True,
)
UNINSTALL = Command(
    "uninstall",
    help="remove the MCP server (and capture hooks) in a client's config",
    add_options=add_options,
    run=uninstall,
    ranks=True,
)
