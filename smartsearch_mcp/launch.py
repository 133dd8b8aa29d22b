"""The command lines an MCP client launches (the server, the capture hooks) and the snippets
that add the server to a client by hand: what `install` writes and `doctor` prints."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from smartsearch_mcp.config import Config
from smartsearch_mcp.paths import APP_NAME
from smartsearch_mcp.postgres_url import MASK, is_postgres_url, mask_url, passwords


def server_command(db: str | None, config: str | None, namespace: str | None) -> list[str]:
    """The absolute command line an MCP client should launch."""
    return [*executable(), "serve", *command_options(db, config, namespace)]


def executable() -> list[str]:
    """This program as an absolute command: the console script, else `python -m`."""
    exe = shutil.which(APP_NAME)
    argv0 = Path(sys.argv[0])
    if argv0.name == APP_NAME and argv0.exists():
        exe = str(argv0.resolve())
    return [exe] if exe else [sys.executable, "-m", "smartsearch_mcp"]


def command_options(db: str | None, config: str | None, namespace: str | None) -> list[str]:
    """--db, --config and --namespace for a command run elsewhere: files as absolute paths,
    a database URL or a preset name as given."""
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


def url_has_password(db: str) -> bool:
    """Whether `db` is a PostgreSQL URL holding a password."""
    return is_postgres_url(db) and bool(passwords(db))


def client_config_text(
    db: str, config_name: str | None, namespace: str | None, config: Config
) -> str:
    """The snippets `install` would write, for adding the server by hand, with a database
    URL's password masked (the text is printed, and may be pasted into an issue)."""
    from smartsearch_mcp.install import server_namespace

    secret = url_has_password(db)
    db = mask_url(db) if secret else db

    def entry(client: str) -> str:
        command = server_command(db, config_name, server_namespace(client, namespace, config))
        return json.dumps(
            {"mcpServers": {"smartsearch": {"command": command[0], "args": command[1:]}}},
            indent=2,
        )

    command = server_command(db, config_name, server_namespace("claude-code", namespace, config))
    claude_code = "claude mcp add smartsearch -- " + " ".join(shell_word(c) for c in command)
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


def shell_word(part: str) -> str:
    """`part` in single quotes when a shell would split or expand it."""
    return f"'{part}'" if any(c in part for c in " \"'$") else part
