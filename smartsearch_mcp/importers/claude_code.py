"""Claude Code session transcripts: `~/.claude/projects/<project>/<session id>.jsonl`.

One JSON object per line. The lines kept are `type` "user" and "assistant" with `uuid`,
`sessionId`, `timestamp` (ISO 8601), `cwd` and `message.content` — a string, or a list of
content blocks of which only `{"type": "text", "text": ...}` blocks are kept (tool calls,
tool results, thinking and images are not conversation). Left out as well: sub-agent
lines (`isSidechain`), meta lines (`isMeta`), compaction summaries (`isCompactSummary`) and
slash-command echoes (text starting `<command-` or `<local-command-`). Other line types
(summary, system, progress …) are skipped; a line that is not JSON (a transcript being
written) is skipped with a debug log.

Each kept line becomes one turn with the line's own timestamp and `uuid` (metadata
`capture_key`), so importing a transcript and capturing it live with the hooks give
identical turns, and the store's dedupe makes either idempotent. Sessions are
`claude-code:<sessionId>`, in the namespace of the project the session ran in (see
smartsearch_mcp.namespaces).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.claude import content_text
from smartsearch_mcp.importers.json_files import bounded_lines, check_regular_file
from smartsearch_mcp.namespaces import directory_namespace
from smartsearch_mcp.types import DEFAULT_NAMESPACE, InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

SESSION_PREFIX = "claude-code:"
SOURCE = "claude-code"
_SKIPPED_PREFIXES = ("<command-", "<local-command-")
_SKIP_FLAGS = ("isSidechain", "isMeta", "isCompactSummary")


@dataclass(frozen=True, slots=True)
class TranscriptTurn:
    """A conversation turn read from a transcript line, with the session and directory the
    line names."""

    session_id: str | None  # Claude Code's sessionId (without our prefix)
    cwd: str | None
    turn: TurnInput


def parse_transcript_lines(lines: Iterable[str]) -> list[TranscriptTurn]:
    """The user and assistant text turns of transcript lines, in file order."""
    turns = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            logger.debug("transcript line %d is not JSON; skipped", number)
            continue
        found = _line_turn(record)
        if found is not None:
            turns.append(found)
    return turns


def read_transcript(path: str | Path) -> list[TranscriptTurn]:
    """The turns of one transcript file (UTF-8 JSONL)."""
    check_regular_file(Path(path), what="a Claude Code transcript (.jsonl)")
    with open(path, encoding="utf-8", errors="replace") as handle:
        # Over-long lines are tool output or images, not conversation text: skipped.
        return parse_transcript_lines(bounded_lines(handle, source=str(path), skip_long=True))


def read_claude_code(path: str | Path) -> Iterator[tuple[str | None, SessionInput]]:
    """(namespace, session) for every session in a transcript file, or in every `*.jsonl`
    under a directory (e.g. ~/.claude/projects). The namespace is the project of the
    session's `cwd` (None when the lines name none)."""
    root = Path(path).expanduser()
    files = sorted(root.rglob("*.jsonl")) if root.is_dir() else [root]
    if not files:
        raise InputError(f"{root}: no Claude Code transcripts (*.jsonl) found")
    sessions: list[tuple[str | None, SessionInput]] = []
    for file in files:
        grouped: dict[str, list[TranscriptTurn]] = {}
        for item in read_transcript(file):
            grouped.setdefault(item.session_id or file.stem, []).append(item)
        for session_id, items in grouped.items():
            cwd = next((i.cwd for i in items if i.cwd), None)
            # Where the capture hook would have put it: the git project of the session's
            # directory, else the default namespace.
            namespace = (directory_namespace(cwd) or DEFAULT_NAMESPACE) if cwd else None
            sessions.append(
                (namespace, SessionInput(SESSION_PREFIX + session_id, [i.turn for i in items]))
            )
    if not sessions:
        raise InputError(
            f"{root} does not look like Claude Code transcripts: no user or assistant text "
            "lines (expected JSONL lines with type, message.content, timestamp, uuid)"
        )
    return iter(sessions)


def _line_turn(record: Any) -> TranscriptTurn | None:
    if not isinstance(record, dict) or record.get("type") not in ("user", "assistant"):
        return None
    if any(record.get(flag) is True for flag in _SKIP_FLAGS):
        return None
    message = record.get("message")
    if not isinstance(message, dict):
        return None
    text = content_text(message.get("content"))
    if not text.strip() or text.lstrip().startswith(_SKIPPED_PREFIXES):
        return None
    role = "user" if record["type"] == "user" else "assistant"
    metadata: dict[str, Any] = {"source": SOURCE}
    uuid = record.get("uuid")
    if isinstance(uuid, str) and uuid:
        metadata["capture_key"] = uuid
    for key, name in (("gitBranch", "git_branch"), ("cwd", "cwd")):
        if isinstance(record.get(key), str) and record[key]:
            metadata[name] = record[key]
    timestamp = record.get("timestamp")
    session_id = record.get("sessionId")
    cwd = record.get("cwd")
    return TranscriptTurn(
        session_id=session_id if isinstance(session_id, str) and session_id else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        turn=TurnInput(
            text=text,
            speaker=role,
            role=role,
            timestamp=timestamp if isinstance(timestamp, str) and timestamp else None,
            metadata=metadata,
        ),
    )
