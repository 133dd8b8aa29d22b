"""Mem-Gallery benchmark conversations: multi-session user/assistant chats with images
(captions only) and human-annotated questions.

One conversation per file: `character_profile` (`name`, ...), `multi_session_dialogues`
(sessions `{session_id: "D1", date, dialogues: [rounds]}`, a round `{round: "D1:2", user,
assistant, image_id?, image_caption?}`) and `"human-annotated QAs"` (`point` (the question
type), `question`, `answer`, `session_id`, `clue`: round ids). A round is one user message and
the assistant's reply: both turns carry its round id, and the captions of its images are
appended to the user message as "[image: …]". `clue` is empty for the abstention type (AR).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

_WHAT = (
    "Mem-Gallery data (a conversation with character_profile, multi_session_dialogues and "
    "'human-annotated QAs')"
)
QUESTIONS_KEY = "human-annotated QAs"


@dataclass(frozen=True, slots=True)
class MemGalleryQuestion:
    """A question; `clue` holds the round ids of the conversation it is about (empty for
    abstention), `unresolved` the clue entries that name no round."""

    point: str
    question: str
    answer: str
    clue: list[str]
    unresolved: list[str]


@dataclass(frozen=True, slots=True)
class MemGalleryConversation:
    """One conversation: a session per dialogue session, each turn's round id in its
    metadata."""

    name: str
    character: str
    sessions: list[SessionInput]
    questions: list[MemGalleryQuestion]


def load_memgallery(path: str | Path) -> list[MemGalleryConversation]:
    """Load Mem-Gallery conversations from a folder of .json files (in name order) or one
    file. Raises InputError naming the file when its structure is not Mem-Gallery's."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise InputError(f"{path} holds no .json files; expected {_WHAT}")
    else:
        files = [path]
    return [_conversation(load_json(file, what=_WHAT), file) for file in files]


def _conversation(data: Any, file: Path) -> MemGalleryConversation:
    if not isinstance(data, dict) or not isinstance(data.get("multi_session_dialogues"), list):
        raise InputError(f"{file}: got {describe(data)}; expected {_WHAT}")
    profile = data.get("character_profile")
    character = str(profile.get("name") or "user") if isinstance(profile, dict) else "user"
    sessions = [
        _session(session, character, f"{file}, session {i}")
        for i, session in enumerate(data["multi_session_dialogues"])
    ]
    rounds = {turn.metadata["round"] for s in sessions for turn in s.turns if turn.metadata}
    entries = data.get(QUESTIONS_KEY) or []
    if not isinstance(entries, list):
        raise InputError(f"{file}: '{QUESTIONS_KEY}' must be a list, got {describe(entries)}")
    questions = [_question(entry, rounds, f"{file}, QA {i}") for i, entry in enumerate(entries)]
    unresolved = sum(len(q.unresolved) for q in questions)
    if unresolved:
        logger.info("%s: %d clue ids name no round", file, unresolved)
    return MemGalleryConversation(file.stem, character, sessions, questions)


def _session(session: object, character: str, where: str) -> SessionInput:
    if not isinstance(session, dict) or not isinstance(session.get("dialogues"), list):
        raise InputError(f"{where}: a session needs a 'dialogues' list of rounds")
    session_id = str(session.get("session_id") or where)
    date = session.get("date")
    timestamp = date if isinstance(date, str) and date.strip() else None
    turns: list[TurnInput] = []
    for index, entry in enumerate(session["dialogues"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("round"), str):
            raise InputError(f"{where}, round {index}: a round needs a string 'round' id")
        metadata = {"round": entry["round"]}
        user = _text(entry.get("user"))
        captions = [c for c in _strings(entry.get("image_caption")) if c.strip()]
        if captions:
            user = " ".join([user, *(f"[image: {caption}]" for caption in captions)]).lstrip()
        if user.strip():
            turns.append(TurnInput(user, character, "user", timestamp, metadata))
        reply = _text(entry.get("assistant"))
        if reply.strip():
            turns.append(TurnInput(reply, "assistant", "assistant", timestamp, dict(metadata)))
    return SessionInput(session_id=session_id, turns=turns)


def _question(entry: object, rounds: set[str], where: str) -> MemGalleryQuestion:
    if not isinstance(entry, dict) or not isinstance(entry.get("question"), str):
        raise InputError(f"{where}: a QA needs a string 'question'")
    clue = [str(c).strip() for c in _strings(entry.get("clue"))]
    answer = entry.get("answer")
    return MemGalleryQuestion(
        point=str(entry.get("point") or "unknown"),
        question=entry["question"],
        answer="" if answer is None else str(answer),
        clue=list(dict.fromkeys(c for c in clue if c in rounds)),
        unresolved=[c for c in clue if c not in rounds],
    )


def _strings(value: object) -> list[str]:
    """A list of strings from a list or a single string (None: none)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(item) for item in value if item is not None]
    return []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
