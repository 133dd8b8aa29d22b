"""Importers: parse conversation exports and benchmark data into sessions. No database access.

User-facing formats (the `import` command) go through `read_sessions(path, fmt)`; the
benchmark loaders (`beam.load_beam`, `locomo.load_locomo`, `longmemeval.load_longmemeval`,
`realmem.load_realmem`, `memgallery.load_memgallery`, `qmsum.load_qmsum`,
`friendsqa.load_friendsqa`) are used by the bench harness, imported from their modules: the
prompt hook imports this package (for Claude Code transcripts) and none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from smartsearch_mcp.importers.chatgpt import parse_chatgpt_export, read_chatgpt
from smartsearch_mcp.importers.claude import parse_claude_export, read_claude
from smartsearch_mcp.importers.claude_code import parse_transcript_lines, read_claude_code
from smartsearch_mcp.importers.json_files import check_regular_file
from smartsearch_mcp.importers.jsonl import parse_jsonl_lines, read_jsonl
from smartsearch_mcp.types import InputError, SessionInput

__all__ = [
    "FORMATS",
    "ImportFormat",
    "ImportedSession",
    "parse_chatgpt_export",
    "parse_claude_export",
    "parse_jsonl_lines",
    "parse_transcript_lines",
    "read_chatgpt",
    "read_claude",
    "read_claude_code",
    "read_jsonl",
    "read_sessions",
]


@dataclass(frozen=True, slots=True)
class ImportedSession:
    """A session read from a file, with the namespace the file gave it (None: the caller's)."""

    namespace: str | None
    session: SessionInput


@dataclass(frozen=True, slots=True)
class ImportFormat:
    """A user-facing import format: its name, a one-line description, and its reader."""

    name: str
    description: str
    read: Callable[[Path], Iterator[ImportedSession]]


def _read_jsonl_sessions(path: Path) -> Iterator[ImportedSession]:
    return iter([ImportedSession(namespace, session) for namespace, session in read_jsonl(path)])


def _read_chatgpt_sessions(path: Path) -> Iterator[ImportedSession]:
    return iter([ImportedSession(None, session) for session in read_chatgpt(path)])


def _read_claude_sessions(path: Path) -> Iterator[ImportedSession]:
    return iter([ImportedSession(None, session) for session in read_claude(path)])


def _read_claude_code_sessions(path: Path) -> Iterator[ImportedSession]:
    return iter([ImportedSession(ns, session) for ns, session in read_claude_code(path)])


FORMATS: dict[str, ImportFormat] = {
    fmt.name: fmt
    for fmt in (
        ImportFormat(
            "jsonl",
            "one turn per line, as written by `export` ({'text': ..., 'session_id': ...})",
            _read_jsonl_sessions,
        ),
        ImportFormat(
            "chatgpt",
            "ChatGPT data export: conversations.json or the export .zip",
            _read_chatgpt_sessions,
        ),
        ImportFormat(
            "claude",
            "Claude.ai data export: conversations.json or the export .zip",
            _read_claude_sessions,
        ),
        ImportFormat(
            "claude-code",
            "Claude Code transcripts: a session .jsonl, or a directory such as "
            "~/.claude/projects (each session goes to its project's namespace)",
            _read_claude_code_sessions,
        ),
    )
}


def read_sessions(path: str | Path, fmt: str) -> Iterator[ImportedSession]:
    """Read the sessions in `path` using import format `fmt` (a key of FORMATS).

    The whole file is parsed and checked before this returns, so a bad file raises InputError
    before any session is handed out.
    """
    import_format = FORMATS.get(fmt)
    if import_format is None:
        raise InputError(f"unknown import format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    check_regular_file(Path(path).expanduser(), what=import_format.description)
    return import_format.read(Path(path))
