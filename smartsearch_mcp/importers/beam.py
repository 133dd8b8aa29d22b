"""BEAM benchmark conversations and probing questions.

A conversation is a folder `N/` with `chat.json` (a list of batches `{batch_number, turns,
time_anchor}`, `turns` being a list of user/assistant exchanges of messages `{role, id,
content, time_anchor?}`) and `probing_questions/probing_questions.json` (ability -> list of
questions; gold evidence in `source_chat_ids`, message ids as a list or a dict of lists).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

CHAT_FILE = "chat.json"
QUESTIONS_FILE = Path("probing_questions") / "probing_questions.json"
# Reference answers live under a different key for each ability.
ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")
# The generator's plan index left at the end of many messages: "... ->-> 1,3".
_INDEX_MARKER = re.compile(r"\s*->->[^\n]{0,24}\Z")
_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True, slots=True)
class BeamQuestion:
    """A BEAM probing question; `gold_message_ids` are the chat message ids it is about
    (empty for abstention questions and the few without `source_chat_ids`)."""

    question: str
    ability: str
    answer: str | None
    gold_message_ids: list[int]
    difficulty: str | None = None

    @property
    def has_gold(self) -> bool:
        return bool(self.gold_message_ids)


@dataclass(frozen=True, slots=True)
class BeamConversation:
    """One BEAM conversation: a session per batch, each turn's message id in its metadata."""

    conversation_id: str
    sessions: list[SessionInput]
    questions: list[BeamQuestion]


def load_beam(path: str | Path, *, strip_index_markers: bool = True) -> list[BeamConversation]:
    """Load BEAM conversations from a split folder of numbered conversation folders, or from
    one conversation folder (holding chat.json).

    With `strip_index_markers`, the trailing "->-> 1,3" plan markers the generator left in
    message text are removed. Raises InputError when the layout or a file is not BEAM's.
    """
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path} is not a folder; expected a BEAM split or conversation folder")
    if (path / CHAT_FILE).is_file():
        folders = [path]
    else:
        folders = sorted(
            (child for child in path.iterdir() if (child / CHAT_FILE).is_file()),
            key=_natural_key,
        )
        if not folders:
            raise InputError(
                f"{path} has no {CHAT_FILE} and no conversation folders holding one; "
                "expected a BEAM split (1/chat.json, 2/chat.json, ...)"
            )
    return [_conversation(folder, strip_index_markers) for folder in folders]


def _conversation(folder: Path, strip_index_markers: bool) -> BeamConversation:
    conversation_id = folder.name
    chat_file = folder / CHAT_FILE
    batches = load_json(chat_file, what="a BEAM chat (a list of batches)")
    if not isinstance(batches, list):
        raise InputError(f"{chat_file}: expected a list of batches, got {describe(batches)}")
    sessions = [
        _batch_session(batch, index, conversation_id, strip_index_markers, f"{chat_file}")
        for index, batch in enumerate(batches)
    ]
    questions_file = folder / QUESTIONS_FILE
    if questions_file.is_file():
        questions = _questions(
            load_json(questions_file, what="BEAM probing questions"), questions_file
        )
    else:
        logger.warning(
            "%s is missing; conversation %s has no questions", questions_file, conversation_id
        )
        questions = []
    return BeamConversation(conversation_id, sessions, questions)


def _batch_session(
    batch: object, index: int, conversation_id: str, strip_index_markers: bool, source: str
) -> SessionInput:
    where = f"{source}, batch {index}"
    if not isinstance(batch, dict) or not isinstance(batch.get("turns"), list):
        raise InputError(f"{where}: a batch must be an object with a 'turns' list")
    number = batch.get("batch_number")
    number = number if isinstance(number, int) and not isinstance(number, bool) else index + 1
    anchor = _anchor(batch.get("time_anchor"))
    turns = []
    for message in _messages(batch["turns"], where):
        # Only the first user message of a batch carries the date; later messages inherit it.
        anchor = _anchor(message.get("time_anchor")) or anchor
        turn = _message_turn(message, anchor, strip_index_markers, where)
        if turn is not None:
            turns.append(turn)
    return SessionInput(session_id=f"beam-{conversation_id}:batch-{number}", turns=turns)


def _messages(exchanges: list[Any], where: str) -> list[dict[str, Any]]:
    """Flatten the batch's exchanges (lists of messages; a bare message is accepted too)."""
    messages = []
    for exchange in exchanges:
        for message in exchange if isinstance(exchange, list) else [exchange]:
            if not isinstance(message, dict):
                raise InputError(f"{where}: a message must be an object, got {describe(message)}")
            messages.append(message)
    return messages


def _message_turn(
    message: dict[str, Any], anchor: str | None, strip_index_markers: bool, where: str
) -> TurnInput | None:
    message_id, content, role = message.get("id"), message.get("content"), message.get("role")
    if isinstance(message_id, bool) or not isinstance(message_id, int):
        raise InputError(f"{where}: every message needs an integer 'id', got {message_id!r}")
    if not isinstance(content, str):
        raise InputError(f"{where}: message {message_id} has no string 'content'")
    if strip_index_markers:
        content = _INDEX_MARKER.sub("", content)
    if not content.strip():
        logger.debug("%s: message %s is empty; skipped", where, message_id)
        return None
    role = role if role in _ROLES else "other"
    return TurnInput(
        text=content,
        speaker=role,
        role=role,
        timestamp=anchor,
        metadata={"message_id": message_id},
    )


def _questions(data: object, source: Path) -> list[BeamQuestion]:
    if not isinstance(data, dict):
        raise InputError(
            f"{source}: expected an object of ability -> questions, got {describe(data)}"
        )
    questions = []
    for ability, entries in data.items():
        if not isinstance(entries, list):
            raise InputError(f"{source}: '{ability}' must be a list of questions")
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict) or not isinstance(entry.get("question"), str):
                raise InputError(f"{source}: {ability}[{index}] needs a string 'question'")
            answer = next((entry[key] for key in ANSWER_KEYS if entry.get(key) is not None), None)
            difficulty = entry.get("difficulty")
            questions.append(
                BeamQuestion(
                    question=entry["question"],
                    ability=ability,
                    answer=None if answer is None else str(answer),
                    gold_message_ids=flatten_message_ids(entry.get("source_chat_ids")),
                    difficulty=difficulty if isinstance(difficulty, str) else None,
                )
            )
    without_gold = sum(not question.has_gold for question in questions)
    logger.debug("%s: %d of %d questions have no gold ids", source, without_gold, len(questions))
    return questions


def flatten_message_ids(value: object) -> list[int]:
    """Message ids from `source_chat_ids`: an int, a list, a dict of lists, nested any depth.

    Digit strings count as ids; null and anything else is dropped. Order kept, no duplicates.
    """
    ids: list[int] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, int) and not isinstance(item, bool):
            ids.append(item)
        elif isinstance(item, str) and item.strip().isdigit():
            ids.append(int(item))
        elif item is not None:
            logger.debug("ignoring source_chat_ids entry %r", item)
    return list(dict.fromkeys(ids))


def _anchor(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _natural_key(path: Path) -> tuple[int, int, str]:
    name = path.name
    return (0, int(name), name) if name.isdigit() else (1, 0, name)
