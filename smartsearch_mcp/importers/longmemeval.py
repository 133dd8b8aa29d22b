"""LongMemEval benchmark records (the public JSON schema).

A file is a list of records with `question_id`, `question_type`, `question`, `question_date`,
`answer`, `answer_session_ids`, `haystack_dates`, `haystack_session_ids` and
`haystack_sessions` (lists of `{role, content, has_answer?}`). Some redistributions store the
list fields as strings holding a Python list ("['answer_280352e9']"); both forms are read.
"""

from __future__ import annotations

import ast
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

_WHAT = "LongMemEval data (a list of records with question_id, question, haystack_sessions ...)"
_ROLES = frozenset({"user", "assistant"})


@dataclass(frozen=True, slots=True)
class LongMemEvalRecord:
    """One question with its haystack. `gold_turns` are (session_id, turn index in that
    session's `turns`) for the turns marked `has_answer`."""

    question_id: str
    question_type: str
    question: str
    question_date: str | None
    answer: str
    answer_session_ids: list[str]
    sessions: list[SessionInput]
    gold_turns: list[tuple[str, int]]

    @property
    def is_abstention(self) -> bool:
        """Abstention questions (id ending in "_abs") have no answer in the haystack."""
        return self.question_id.endswith("_abs")


def load_longmemeval(path: str | Path) -> list[LongMemEvalRecord]:
    """Load LongMemEval records from a JSON file (a list of records, or one record).

    Raises InputError naming the record and field when the structure is wrong.
    """
    path = Path(path)
    data = load_json(path, what=_WHAT)
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise InputError(f"{path} does not look like LongMemEval data: got {describe(data)}")
    return [_record(item, f"{path}, record {index}") for index, item in enumerate(data)]


def parse_list_field(value: object, where: str) -> list[Any]:
    """A list field given as a list, or as a string holding a JSON or Python list literal.

    Strings are read with json.loads, then ast.literal_eval (literals only, no code runs).
    """
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        for read in (json.loads, ast.literal_eval):
            try:
                parsed = read(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(parsed, list):
                return parsed
    shown = repr(value)[:60] if isinstance(value, str) else describe(value)
    raise InputError(f"{where} must be a list or a string holding a list, got {shown}")


def _record(item: object, where: str) -> LongMemEvalRecord:
    if not isinstance(item, dict):
        raise InputError(f"{where} is {describe(item)}, not a record object")
    question_id = item.get("question_id")
    if not isinstance(question_id, str) or not isinstance(item.get("question"), str):
        raise InputError(f"{where}: a record needs string 'question_id' and 'question'; {_WHAT}")
    where = f"{where} ({question_id})"
    session_ids = [str(sid) for sid in _list(item, "haystack_session_ids", where)]
    haystack = _list(item, "haystack_sessions", where)
    dates = _list(item, "haystack_dates", where) if "haystack_dates" in item else []
    if len(haystack) != len(session_ids) or (dates and len(dates) != len(session_ids)):
        raise InputError(
            f"{where}: haystack_sessions ({len(haystack)}), haystack_session_ids "
            f"({len(session_ids)}) and haystack_dates ({len(dates)}) must have equal lengths"
        )
    sessions: list[SessionInput] = []
    gold_turns: list[tuple[str, int]] = []
    for index, (session_id, turns) in enumerate(zip(session_ids, haystack, strict=True)):
        date = dates[index] if dates and isinstance(dates[index], str) else None
        session = _session(session_id, turns, date, f"{where}, session {session_id}")
        sessions.append(session)
        gold_turns.extend(
            (session_id, position)
            for position, turn in enumerate(session.turns)
            if turn.metadata and turn.metadata.get("has_answer")
        )
    question_date = item.get("question_date")
    answer = item.get("answer")
    return LongMemEvalRecord(
        question_id=question_id,
        question_type=str(item.get("question_type") or ""),
        question=item["question"],
        question_date=question_date if isinstance(question_date, str) else None,
        answer="" if answer is None else str(answer),
        answer_session_ids=[str(sid) for sid in _list(item, "answer_session_ids", where)],
        sessions=sessions,
        gold_turns=gold_turns,
    )


def _list(item: dict[str, Any], key: str, where: str) -> list[Any]:
    if key not in item:
        raise InputError(f"{where}: '{key}' is missing")
    return parse_list_field(item[key], f"{where}: '{key}'")


def _session(session_id: str, turns: object, date: str | None, where: str) -> SessionInput:
    if not isinstance(turns, list):
        raise InputError(f"{where} must be a list of turns, got {describe(turns)}")
    kept = []
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
            raise InputError(f"{where}, turn {index}: needs a string 'content'")
        if not turn["content"].strip():
            logger.debug("%s, turn %d is empty; skipped", where, index)
            continue
        role = turn.get("role") if turn.get("role") in _ROLES else "other"
        kept.append(
            TurnInput(
                text=turn["content"],
                speaker=str(role),
                role=str(role),
                timestamp=date,
                metadata={"has_answer": True} if turn.get("has_answer") is True else None,
            )
        )
    return SessionInput(session_id=session_id, turns=kept)
