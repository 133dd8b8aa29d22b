"""RealMem benchmark personas: sessions of user/assistant chats and the queries asked in them.

One persona per file: `{_metadata: {person_name, ...}, dialogues: [sessions]}`, each session
`{session_identifier, session_uuid, current_time, dialogue_turns, extracted_memory}`. A query
is a User turn with `is_query` true; the Assistant turn after it names the memories it used
(`memory_used: [{session_uuid, content}]`). Its gold evidence takes two hops: each memory's
`content` equals one `extracted_memory[].content` of that session, and that memory point's
source turn is found by its `source_content_snapshot` (whitespace-folded: equal, else
containing or contained, else clearly the most similar turn), and only when the snapshot
matches nothing by `source_turn` (1-based for most points, 0-based for some: the role snapshot
decides). A query is answered from the past only: references to its own turn or later are
dropped.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

_WHAT = "RealMem data (a persona file with _metadata and dialogues)"
_SPEAKER_ROLES = {"user": "user", "assistant": "assistant"}
# "2025-11-16 (Sunday)": the weekday in brackets is dropped.
_WEEKDAY = re.compile(r"\s*\([^)]*\)\s*\Z")
# A snapshot that matches no turn exactly is resolved to the most similar turn only when the
# match is clear: at least this similar, and this far ahead of the runner-up.
SIMILAR_AT_LEAST = 0.6
SIMILAR_MARGIN = 0.2


@dataclass(frozen=True, slots=True)
class RealMemQuery:
    """A query turn. It is asked before turn `position` (of the kept turns) of session
    `session_index`; `gold` holds the turn keys ("<session_uuid>#<index in dialogue_turns>")
    of the earlier turns its memories come from, `unresolved` the memory references that
    resolved to no turn."""

    query_id: str
    text: str
    category: str
    topic: str | None
    session_index: int
    position: int
    gold: list[str]
    unresolved: list[str]
    reference: str | None = None


@dataclass(frozen=True, slots=True)
class RealMemPersona:
    """One persona: its sessions in file (time) order, each turn's key in its metadata, and
    the counts of how its memory points and references resolved."""

    name: str
    sessions: list[SessionInput]
    queries: list[RealMemQuery]
    counts: dict[str, int] = field(default_factory=dict)


def load_realmem(path: str | Path) -> list[RealMemPersona]:
    """Load RealMem personas from a folder of persona .json files, or one such file (in name
    order). Raises InputError naming the file when its structure is not RealMem's."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise InputError(f"{path} holds no .json files; expected {_WHAT}")
    else:
        files = [path]
    return [_persona(load_json(file, what=_WHAT), file) for file in files]


def turn_key(session_uuid: str, index: int) -> str:
    """The label of turn `index` (0-based, in `dialogue_turns`) of a session."""
    return f"{session_uuid}#{index}"


def resolve_source_turn(
    point: dict[str, Any], turns: list[dict[str, Any]]
) -> tuple[int | None, str]:
    """The index of a memory point's source turn among a session's turns, and how it was
    found: "equal", "contained", "similar", "source_turn", or (None, "unresolved")."""
    texts = [_fold(turn.get("content")) for turn in turns]
    snapshot = _fold(point.get("source_content_snapshot"))
    if snapshot:
        equal = [i for i, text in enumerate(texts) if text == snapshot]
        if equal:
            return equal[0], "equal"
        overlapping = [i for i, t in enumerate(texts) if t and (snapshot in t or t in snapshot)]
        if overlapping:  # the closest in length of those holding it or held by it
            return min(overlapping, key=lambda i: abs(len(texts[i]) - len(snapshot))), "contained"
        words = snapshot.split()
        ratios = sorted(
            (
                (SequenceMatcher(None, words, text.split(), autojunk=False).ratio(), i)
                for i, text in enumerate(texts)
                if text
            ),
            reverse=True,
        )
        if ratios:
            best, index = ratios[0]
            second = ratios[1][0] if len(ratios) > 1 else 0.0
            if best >= SIMILAR_AT_LEAST and best - second >= SIMILAR_MARGIN:
                return index, "similar"
    by_number = _by_source_turn(point, turns)
    return (by_number, "source_turn") if by_number is not None else (None, "unresolved")


def _by_source_turn(point: dict[str, Any], turns: list[dict[str, Any]]) -> int | None:
    """`source_turn` read as 1-based, else as 0-based: the one whose speaker is the point's
    `source_role_snapshot` (when it names none, 1-based)."""
    number = point.get("source_turn")
    if isinstance(number, str) and number.strip().lstrip("-").isdigit():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
        return None
    role = point.get("source_role_snapshot")
    in_range = [i for i in (number - 1, number) if 0 <= i < len(turns)]
    if not isinstance(role, str) or not role:
        return in_range[0] if in_range else None
    return next((i for i in in_range if turns[i].get("speaker") == role), None)


def _persona(data: Any, file: Path) -> RealMemPersona:
    if not isinstance(data, dict) or not isinstance(data.get("dialogues"), list):
        raise InputError(f"{file}: got {describe(data)}; expected {_WHAT}")
    metadata = data.get("_metadata")
    name = str((metadata.get("person_name") if isinstance(metadata, dict) else None) or file.stem)
    raw_sessions = [
        _checked_session(s, f"{file}, session {i}") for i, s in enumerate(data["dialogues"])
    ]
    counts: Counter[str] = Counter()
    order = {str(s["session_uuid"]): i for i, s in enumerate(raw_sessions)}
    sources = _memory_sources(raw_sessions, counts)
    sessions: list[SessionInput] = []
    queries: list[RealMemQuery] = []
    for index, session in enumerate(raw_sessions):
        session_uuid = str(session["session_uuid"])
        date = _date(session.get("current_time"))
        turns: list[TurnInput] = []
        for position, turn in enumerate(session["dialogue_turns"]):
            if _is_query(turn):
                replies = session["dialogue_turns"][position + 1 : position + 2]
                queries.append(
                    _query(
                        turn, replies, (index, position, len(turns)), order, sources, counts, date
                    )
                )
            content = turn.get("content")
            if not isinstance(content, str) or not content.strip():
                counts["empty turns"] += 1
                continue
            speaker = str(turn.get("speaker") or "")
            turns.append(
                TurnInput(
                    text=content,
                    speaker=speaker or None,
                    role=_SPEAKER_ROLES.get(speaker.lower(), "other"),
                    timestamp=date,
                    metadata={"session_uuid": session_uuid, "turn": position},
                )
            )
        sessions.append(SessionInput(session_id=f"{name}:{session_uuid}", turns=turns))
    counts["queries without gold"] = sum(not q.gold for q in queries)
    logger.info("%s: %s", file, ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return RealMemPersona(name, sessions, queries, dict(sorted(counts.items())))


def _checked_session(session: object, where: str) -> dict[str, Any]:
    if not isinstance(session, dict) or not isinstance(session.get("dialogue_turns"), list):
        raise InputError(f"{where}: a session needs a 'dialogue_turns' list; expected {_WHAT}")
    if not session.get("session_uuid"):
        raise InputError(f"{where}: a session needs a 'session_uuid'")
    if any(not isinstance(turn, dict) for turn in session["dialogue_turns"]):
        raise InputError(f"{where}: every dialogue turn must be an object")
    return session


def _memory_sources(
    sessions: list[dict[str, Any]], counts: Counter[str]
) -> dict[tuple[str, str], str | None]:
    """(session uuid, memory content) -> the key of the memory point's source turn (None when
    it resolves to none); counts how each point was resolved."""
    sources: dict[tuple[str, str], str | None] = {}
    for session in sessions:
        session_uuid = str(session["session_uuid"])
        for point in session.get("extracted_memory") or []:
            if not isinstance(point, dict):
                counts["memory points unreadable"] += 1
                continue
            index, how = resolve_source_turn(point, session["dialogue_turns"])
            counts[f"memory points {how}"] += 1
            key = (session_uuid, _content(point.get("content")))
            if sources.get(key) is None:  # the first point with a text that resolves
                sources[key] = None if index is None else turn_key(session_uuid, index)
    return sources


def _query(
    turn: dict[str, Any],
    replies: list[dict[str, Any]],
    at: tuple[int, int, int],
    order: dict[str, int],
    sources: dict[tuple[str, str], str | None],
    counts: Counter[str],
    date: str | None,
) -> RealMemQuery:
    session_index, index, position = at
    gold: list[str] = []
    unresolved: list[str] = []
    used = replies[0].get("memory_used") if replies else None
    for reference in used if isinstance(used, list) else []:
        counts["memory references"] += 1
        if not isinstance(reference, dict):
            unresolved.append(str(reference))
            counts["memory references unresolved"] += 1
            continue
        session_uuid = str(reference.get("session_uuid"))
        content = _content(reference.get("content"))
        key = sources.get((session_uuid, content))
        if key is None:
            unresolved.append(f"{session_uuid}: {content[:60]}")
            counts["memory references unresolved"] += 1
            continue
        counts["memory references resolved"] += 1
        source_index = int(key.rsplit("#", 1)[1])
        source_session = order.get(session_uuid, len(order))
        if (source_session, source_index) >= (session_index, index):
            counts["memory references to the query turn or later (dropped)"] += 1
            continue
        if key not in gold:
            gold.append(key)
    text = turn.get("content")
    return RealMemQuery(
        query_id=str(turn.get("query_id") or f"s{session_index}t{index}"),
        text=text if isinstance(text, str) else "",
        category=str(turn.get("category_name") or "unknown"),
        topic=turn.get("topic") if isinstance(turn.get("topic"), str) else None,
        session_index=session_index,
        position=position,
        gold=gold,
        unresolved=unresolved,
        reference=date,
    )


def _is_query(turn: dict[str, Any]) -> bool:
    value = turn.get("is_query")
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _content(value: object) -> str:
    """A memory's content as compared: the string, or a dict as sorted JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _fold(value: object) -> str:
    return " ".join(value.split()).lower() if isinstance(value, str) else ""


def _date(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return _WEEKDAY.sub("", value.strip()) or None
