"""The command line's words: counts in English, and the tools' argument names in messages
shared with the MCP tools replaced by the command line's flags."""

from __future__ import annotations

# The tools' argument names in messages shared with the MCP tools -> the CLI's wording.
CLI_WORDS = (
    ("turns[0].role", "--role"),
    ("turns[0].speaker", "--speaker"),
    ("turns[0].timestamp", "--timestamp"),
    ("turns[0].text", "the note"),
    ("turns[0].metadata", "the note's metadata"),
    ("pass regex=false", "leave out --regex"),
    ("regex=false", "no --regex"),
    ("confirm=true", "--all --yes"),
    ("max_tokens", "--max-tokens"),
    ("limit must", "--limit must"),
    ("since must be earlier than until", "--since must be earlier than --until"),
    ("session_id", "--session-id"),
)


def cli_wording(message: str) -> str:
    """`message` in the command line's words (its flags, not the tools' argument names)."""
    for tool, cli in CLI_WORDS:
        message = message.replace(tool, cli)
    return message


def plural(count: int, noun: str) -> str:
    """ "1 turn", "2 turns"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
