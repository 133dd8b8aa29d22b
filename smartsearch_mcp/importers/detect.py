"""Which import format a file is in, from what it holds: `import FILE` needs no `--format`.

Only the start of a file is read: a JSON export is told apart by the key its conversations
keep their messages under (ChatGPT's `mapping`, Claude.ai's `chat_messages`), a JSONL file by
its first records (ours carry `text`, Claude Code's transcript lines `sessionId`/`message`).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from smartsearch_mcp.importers.json_files import check_regular_file, zip_member
from smartsearch_mcp.types import InputError

_SNIFF_BYTES = 1 << 20  # a conversation's first message key comes well before this
_SNIFF_LINES = 50
_EXPORT_MEMBER = "conversations.json"
_JSON_KEYS = {"chatgpt": '"mapping"', "claude": '"chat_messages"'}
_CHOOSE = "pass --format (jsonl, chatgpt, claude or claude-code)"


def detect_format(path: Path) -> str:
    """The import format of `path` (a key of `importers.FORMATS`).

    Raises InputError naming the file when it cannot be told, saying to pass --format.
    """
    check_regular_file(path, what="a file to import")
    if path.is_dir():
        return "claude-code"  # a folder of transcripts, such as ~/.claude/projects
    if zipfile.is_zipfile(path):
        return _json_export_format(_zip_head(path), f"{path}")
    head = _read_head(path)
    start = head.lstrip()[:1]
    if start == "[":
        return _json_export_format(head, str(path))
    if start == "{":
        fmt = _jsonl_format(head)
        return fmt if fmt is not None else _json_export_format(head, str(path))
    raise InputError(f"{path} is not JSON or JSONL, so its format cannot be told; {_CHOOSE}")


def _read_head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            raw = handle.read(_SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from exc
    return raw.decode("utf-8", errors="replace")


def _zip_head(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            name = zip_member(archive, _EXPORT_MEMBER)
            if name is None:
                raise InputError(
                    f"{path} is a zip file without {_EXPORT_MEMBER}: not a ChatGPT or Claude.ai "
                    f"export; {_CHOOSE}"
                )
            with archive.open(name) as member:
                return member.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
    except zipfile.BadZipFile as exc:
        raise InputError(f"{path} is a damaged zip file: {exc}") from exc


def _json_export_format(head: str, source: str) -> str:
    """chatgpt or claude: whichever message key comes first in the file."""
    found = {fmt: head.find(key) for fmt, key in _JSON_KEYS.items() if key in head}
    if not found:
        raise InputError(
            f"{source} holds neither a ChatGPT export ('mapping') nor a Claude.ai export "
            f"('chat_messages'); {_CHOOSE}"
        )
    return min(found, key=lambda fmt: found[fmt])


def _jsonl_format(head: str) -> str | None:
    """jsonl or claude-code from the first records; None when the first line is not a whole
    JSON object (a pretty-printed JSON file)."""
    lines = [line for line in head.splitlines() if line.strip()]
    for number, line in enumerate(lines[:_SNIFF_LINES]):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            if number == 0:
                return None
            continue
        if not isinstance(record, dict):
            continue
        if "sessionId" in record or isinstance(record.get("message"), dict):
            return "claude-code"
        if isinstance(record.get("text"), str):
            return "jsonl"
    return None
