"""Our JSONL format: one turn per line, exactly what `export` writes, so export -> import
round-trips.

Each line is a JSON object with `text` (required) and optionally `session_id`, `namespace`,
`speaker`, `role` (user|assistant|other), `timestamp` / `timestamp_raw` (string or number) and
`metadata` (object). Export's other keys (`id`, `position`, `created_at`) are ignored on import.

Importing what `export` wrote stores nothing new: export keeps each turn's `session_id`, and
marks a timestamp the store generated (`"timestamp_generated": true`, the turn was given
without one) so the imported turn is recognised as the same. Lines without a `session_id`
get a session id derived from the first such line of their namespace (`jsonl-<hash>`), so
importing the same file again — or the file with lines appended — adds only what is new.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from smartsearch_mcp.dates import parse_timestamp
from smartsearch_mcp.importers.json_files import bounded_lines, check_regular_file, describe
from smartsearch_mcp.types import ROLES, InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

KNOWN_KEYS = frozenset(
    {
        "id",
        "namespace",
        "session_id",
        "position",
        "speaker",
        "role",
        "text",
        "timestamp",
        "timestamp_raw",
        "created_at",
        "metadata",
        "timestamp_generated",
    }
)

NamespacedSession = tuple[str | None, SessionInput]


def read_jsonl(path: str | Path) -> Iterator[NamespacedSession]:
    """Read a JSONL file of turns as (namespace or None, session) pairs.

    Lines are grouped by (namespace, session_id) in order of first appearance; lines without a
    session_id form one session with session_id None. The whole file is checked before the
    first session is returned, so a bad line raises InputError (naming the line) before
    anything is imported.
    """
    path = Path(path)
    check_regular_file(path, what="a JSONL file of turns")
    try:
        with path.open(encoding="utf-8-sig") as handle:
            lines = bounded_lines(handle, source=str(path))
            sessions = parse_jsonl_lines(lines, source=str(path))
    except FileNotFoundError as exc:
        raise InputError(f"{path} does not exist; expected a JSONL file of turns") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path} is a folder; expected a JSONL file of turns") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"{path} is not UTF-8 text; expected a JSONL file of turns") from exc
    return iter(sessions)


def parse_jsonl_lines(lines: Iterable[str], *, source: str = "input") -> list[NamespacedSession]:
    """Parse JSONL lines (see `read_jsonl`); `source` names the input in error messages."""
    groups: dict[tuple[str | None, str | None], list[TurnInput]] = {}
    ignored: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}, line {number}"
        record = _load_object(line, where)
        ignored.update(record.keys() - KNOWN_KEYS)
        namespace = _optional_string(record, "namespace", where)
        session_id = _optional_string(record, "session_id", where)
        groups.setdefault((namespace, session_id), []).append(_turn(record, where))
    if ignored:
        logger.debug("%s: ignored unknown keys %s", source, sorted(ignored))
    return [
        (namespace, SessionInput(session_id or _derived_session_id(namespace, turns), turns))
        for (namespace, session_id), turns in groups.items()
    ]


def _derived_session_id(namespace: str | None, turns: list[TurnInput]) -> str:
    """A session id for lines that carry none, the same on every import of the same lines."""
    first = turns[0]
    key = json.dumps([namespace, first.text, first.speaker, first.role, first.timestamp])
    return "jsonl-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _load_object(line: str, where: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg}, column {exc.colno})") from exc
    except RecursionError as exc:
        raise InputError(f"{where}: JSON nested too deeply to read") from exc
    if not isinstance(record, dict):
        raise InputError(
            f"{where}: expected a JSON object with a 'text' key, got {describe(record)}"
        )
    return record


def _turn(record: dict[str, Any], where: str) -> TurnInput:
    if "text" not in record:
        raise InputError(f"{where}: 'text' is missing; every line needs the turn's text")
    text = record["text"]
    if not isinstance(text, str):
        raise InputError(f"{where}: 'text' must be a string, got {describe(text)}")
    if not text.strip():
        raise InputError(f"{where}: 'text' is empty; remove the line or give the turn's text")
    role = _optional_string(record, "role", where)
    if role is not None and role not in ROLES:
        raise InputError(f"{where}: 'role' must be one of {', '.join(ROLES)}, got {role!r}")
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(f"{where}: 'metadata' must be an object, got {describe(metadata)}")
    return TurnInput(
        text=text,
        speaker=_optional_string(record, "speaker", where),
        role=role,
        timestamp=_timestamp(record, where),
        metadata=metadata,
        source=where,
        timestamp_generated=_flag(record, "timestamp_generated", where),
    )


def _flag(record: dict[str, Any], key: str, where: str) -> bool:
    value = record.get(key, False)
    if not isinstance(value, bool):
        raise InputError(f"{where}: '{key}' must be true or false, got {describe(value)}")
    return value


def _timestamp(record: dict[str, Any], where: str) -> str | None:
    """`timestamp_raw` (the caller's original string) when present, else `timestamp`."""
    key = "timestamp_raw" if record.get("timestamp_raw") is not None else "timestamp"
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(f"{where}: '{key}' must be a string or a number, got {describe(value)}")
    try:
        parse_timestamp(value)
    except InputError as exc:
        raise InputError(f"{where}: '{key}': {exc}") from exc
    return value if isinstance(value, str) else repr(value)


def _optional_string(record: dict[str, Any], key: str, where: str) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: '{key}' must be a string, got {describe(value)}")
    if not value:
        raise InputError(f"{where}: '{key}' is empty; omit it or give a value")
    return value
