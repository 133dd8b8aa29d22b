"""Benchmark data as haystacks: the sessions to remember and the questions to recall for.

Each benchmark's importer (smartsearch_mcp.importers) parses the files; this module turns
its records into `Haystack`s whose gold evidence is named by labels that the runner maps to
stored turn ids once the sessions are remembered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from smartsearch_mcp.dates import parse_timestamp
from smartsearch_mcp.importers import load_beam, load_locomo, load_longmemeval
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

log = logging.getLogger(__name__)

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
BEAM_ABILITIES: tuple[str, ...] = (
    "information_extraction",
    "multi_session_reasoning",
    "temporal_reasoning",
    "knowledge_update",
    "event_ordering",
    "contradiction_resolution",
    "preference_following",
    "instruction_following",
    "summarization",
    "abstention",
)
LONGMEMEVAL_TYPES: tuple[str, ...] = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)

# Labels a turn: (session id, position in the session, the turn) -> its gold labels.
TurnLabeler = Callable[[str, int, TurnInput], Sequence[str]]


@dataclass(frozen=True, slots=True)
class BenchQuestion:
    """A question with its gold evidence as labels (resolved to turn ids after remembering)."""

    qid: str
    question: str
    category: str
    answer: str
    gold_labels: list[str]
    unresolved_evidence: list[str] = field(default_factory=list)
    reference: datetime | None = None
    # Asked during the conversation, not after it: before turn `position` of session
    # `index` of the haystack (memory holds the sessions before it and that session's turns
    # before the position). None: after the whole haystack.
    asked_at: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Haystack:
    """What one fresh database holds: sessions, the questions asked of them, and how turns
    are labelled for gold matching."""

    name: str
    sessions: list[SessionInput]
    questions: list[BenchQuestion]
    labeler: TurnLabeler
    half: str | None = None  # which half of the split by conversation it belongs to


@dataclass(frozen=True, slots=True)
class Benchmark:
    """A loaded benchmark: its haystacks and the category order for tables; how its
    haystacks are split into halves, and counts of what the data held that could not be
    asked or resolved."""

    name: str
    source: str
    haystacks: list[Haystack]
    category_order: tuple[str, ...]
    split: str | None = None
    counts: dict[str, int] = field(default_factory=dict)


def load_locomo_bench(path: str | Path, categories: Sequence[int] = (1, 2, 3, 4)) -> Benchmark:
    """LoCoMo: one haystack per conversation; gold = evidence dia ids ("D3:12").

    Questions are asked "after" the conversation: relative dates resolve against the last
    session's date.
    """
    wanted = set(categories)
    haystacks = []
    for conversation in load_locomo(_existing(path)):
        reference = _last_date(conversation.sessions)
        questions = [
            BenchQuestion(
                qid=f"{conversation.sample_id}:q{index}",
                question=q.question,
                category=LOCOMO_CATEGORIES.get(q.category, str(q.category)),
                answer=q.answer,
                gold_labels=list(q.evidence),
                unresolved_evidence=list(q.unresolved_evidence),
                reference=reference,
            )
            for index, q in enumerate(conversation.questions)
            if q.category in wanted
        ]
        haystacks.append(
            Haystack(conversation.sample_id, conversation.sessions, questions, _metadata_label)
        )
    order = tuple(LOCOMO_CATEGORIES[c] for c in sorted(LOCOMO_CATEGORIES) if c in wanted)
    return Benchmark("locomo", str(path), haystacks, order)


def load_beam_bench(path: str | Path, abilities: Sequence[str] | None = None) -> Benchmark:
    """BEAM: one haystack per conversation; gold = `source_chat_ids` message ids."""
    wanted = set(abilities) if abilities else None
    haystacks = []
    for conversation in load_beam(_existing(path)):
        reference = _last_date(conversation.sessions)
        questions = [
            BenchQuestion(
                qid=f"beam-{conversation.conversation_id}:q{index}",
                question=q.question,
                category=q.ability,
                answer=q.answer or "",
                gold_labels=[str(mid) for mid in q.gold_message_ids],
                reference=reference,
            )
            for index, q in enumerate(conversation.questions)
            if wanted is None or q.ability in wanted
        ]
        haystacks.append(
            Haystack(
                f"beam-{conversation.conversation_id}",
                conversation.sessions,
                questions,
                _message_label,
            )
        )
    return Benchmark("beam", str(path), haystacks, BEAM_ABILITIES)


def load_longmemeval_bench(
    path: str | Path, question_types: Sequence[str] | None = None
) -> Benchmark:
    """LongMemEval: each record is its own haystack; gold = turns marked `has_answer`, or
    every turn of the answer sessions when no turn is marked. The question date is the
    reference for relative dates."""
    wanted = set(question_types) if question_types else None
    haystacks = []
    for record in load_longmemeval(_existing(path)):
        if wanted is not None and record.question_type not in wanted:
            continue
        if record.gold_turns:
            gold = [f"{sid}#{pos}" for sid, pos in record.gold_turns]
        else:
            answer_sessions = set(record.answer_session_ids)
            gold = [
                f"{s.session_id}#{pos}"
                for s in record.sessions
                if s.session_id in answer_sessions
                for pos in range(len(s.turns))
            ]
        if record.is_abstention:
            gold = []
        question = BenchQuestion(
            qid=record.question_id,
            question=record.question,
            category=record.question_type or "unknown",
            answer=record.answer,
            gold_labels=gold,
            reference=_parse_date(record.question_date),
        )
        haystacks.append(Haystack(record.question_id, record.sessions, [question], _position_label))
    return Benchmark("longmemeval", str(path), haystacks, LONGMEMEVAL_TYPES)


def _metadata_label(session_id: str, position: int, turn: TurnInput) -> Sequence[str]:
    dia_id = (turn.metadata or {}).get("dia_id")
    return [str(dia_id)] if dia_id is not None else []


def _message_label(session_id: str, position: int, turn: TurnInput) -> Sequence[str]:
    message_id = (turn.metadata or {}).get("message_id")
    return [str(message_id)] if message_id is not None else []


def _position_label(session_id: str, position: int, turn: TurnInput) -> Sequence[str]:
    return [f"{session_id}#{position}"]


def _existing(path: str | Path) -> Path:
    file = Path(path).expanduser()
    if not file.exists():
        raise InputError(f"{file}: no such file or folder; give the path to the benchmark data")
    return file


def _last_date(sessions: Sequence[SessionInput]) -> datetime | None:
    for session in reversed(sessions):
        for turn in reversed(session.turns):
            moment = _parse_date(turn.timestamp)
            if moment is not None:
                return moment
    return None


def _parse_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = parse_timestamp(value)
    except InputError:
        log.debug("unreadable date %r; no reference date", value)
        return None
    return moment.replace(tzinfo=None)
