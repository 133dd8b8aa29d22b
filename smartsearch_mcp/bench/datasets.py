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
from smartsearch_mcp.importers.beam import load_beam
from smartsearch_mcp.importers.friendsqa import load_friendsqa, question_word
from smartsearch_mcp.importers.locomo import load_locomo
from smartsearch_mcp.importers.longmemeval import load_longmemeval
from smartsearch_mcp.importers.memgallery import load_memgallery
from smartsearch_mcp.importers.qmsum import load_qmsum
from smartsearch_mcp.importers.realmem import load_realmem, turn_key
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
REALMEM_CATEGORIES: tuple[str, ...] = (
    "Dynamic Incremental",
    "Dynamic Updating",
    "Implicit Preference",
    "Temporal-reasoning",
)
MEMGALLERY_TYPES: tuple[str, ...] = ("VS", "TTL", "FR", "MR", "VR", "TR", "KR", "CD", "AR")
QMSUM_DOMAINS: tuple[str, ...] = ("product", "academic", "committee")
FRIENDSQA_KINDS: tuple[str, ...] = ("who", "what", "where", "when", "why", "how")
HALVES: tuple[str, str] = ("A", "B")

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
    session's date. Halves alternate in sample id order.
    """
    wanted = set(categories)
    conversations = load_locomo(_existing(path))
    halves = alternate_halves([c.sample_id for c in conversations])
    haystacks = []
    for conversation in conversations:
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
            Haystack(
                conversation.sample_id,
                conversation.sessions,
                questions,
                _metadata_label,
                halves[conversation.sample_id],
            )
        )
    order = tuple(LOCOMO_CATEGORIES[c] for c in sorted(LOCOMO_CATEGORIES) if c in wanted)
    split = "halves alternate in sample id order (A: 1st, 3rd, ...; B: 2nd, 4th, ...)"
    return Benchmark("locomo", str(path), haystacks, order, split)


def load_beam_bench(path: str | Path, abilities: Sequence[str] | None = None) -> Benchmark:
    """BEAM: one haystack per conversation; gold = `source_chat_ids` message ids. Halves
    alternate in conversation id order."""
    wanted = set(abilities) if abilities else None
    conversations = load_beam(_existing(path))
    halves = alternate_halves([f"beam-{c.conversation_id}" for c in conversations])
    haystacks = []
    for conversation in conversations:
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
                halves[f"beam-{conversation.conversation_id}"],
            )
        )
    split = "halves alternate in conversation id order (A: 1st, 3rd, ...; B: 2nd, 4th, ...)"
    return Benchmark("beam", str(path), haystacks, BEAM_ABILITIES, split)


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


def load_realmem_bench(path: str | Path, categories: Sequence[str] | None = None) -> Benchmark:
    """RealMem: one haystack per persona; each query is asked where it occurs (memory holds
    the sessions before its own and that session's turns before it); gold = the source
    turns of the memories its reply used. Halves alternate in persona name order."""
    wanted = set(categories) if categories else None
    personas = load_realmem(_existing(path))
    halves = alternate_halves([p.name for p in personas])
    counts: dict[str, int] = {}
    haystacks = []
    for persona in personas:
        _add_counts(counts, persona.counts)
        questions = [
            BenchQuestion(
                qid=f"{persona.name}:{query.query_id}",
                question=query.text,
                category=query.category,
                answer="",
                gold_labels=list(query.gold),
                unresolved_evidence=list(query.unresolved),
                reference=_parse_date(query.reference),
                asked_at=(query.session_index, query.position),
            )
            for query in persona.queries
            if wanted is None or query.category in wanted
        ]
        haystacks.append(
            Haystack(
                persona.name, persona.sessions, questions, _turn_key_label, halves[persona.name]
            )
        )
    split = "halves alternate in persona name order (A: 1st, 3rd, ...; B: 2nd, 4th, ...)"
    return Benchmark("realmem", str(path), haystacks, REALMEM_CATEGORIES, split, counts)


def load_memgallery_bench(path: str | Path, types: Sequence[str] | None = None) -> Benchmark:
    """Mem-Gallery: one haystack per conversation, asked after its last session; gold = the
    `clue` round ids (each the user turn and the reply); abstention (AR) has none. Halves
    alternate in file name order."""
    wanted = set(types) if types else None
    conversations = load_memgallery(_existing(path))
    halves = alternate_halves([c.name for c in conversations])
    counts: dict[str, int] = {}
    haystacks = []
    for conversation in conversations:
        reference = _last_date(conversation.sessions)
        questions = [
            BenchQuestion(
                qid=f"{conversation.name}:q{index}",
                question=q.question,
                category=q.point,
                answer=q.answer,
                gold_labels=list(q.clue),
                unresolved_evidence=list(q.unresolved),
                reference=reference,
            )
            for index, q in enumerate(conversation.questions)
            if wanted is None or q.point in wanted
        ]
        _add_counts(
            counts,
            {
                "questions without clue (abstention)": sum(not q.gold_labels for q in questions),
                "clue ids naming no round": sum(len(q.unresolved_evidence) for q in questions),
            },
        )
        haystacks.append(
            Haystack(
                conversation.name,
                conversation.sessions,
                questions,
                _metadata_labeler("round"),
                halves[conversation.name],
            )
        )
    split = "halves alternate in file name order (A: 1st, 3rd, ...; B: 2nd, 4th, ...)"
    return Benchmark("memgallery", str(path), haystacks, MEMGALLERY_TYPES, split, counts)


def load_qmsum_bench(path: str | Path, domains: Sequence[str] | None = None) -> Benchmark:
    """QMSum: one haystack per meeting, asked after it; gold = the transcript turns of a
    specific query's spans (general queries have none and are not asked). The halves are the
    split folders the meetings were read from (train, val); categories are the meetings'
    sources (product design, academic, committee)."""
    wanted = set(domains) if domains else None
    counts: dict[str, int] = {}
    haystacks = []
    for meeting in load_qmsum(_existing(path)):
        if wanted is not None and meeting.domain not in wanted:
            continue
        questions = [
            BenchQuestion(
                qid=f"{meeting.name}:q{index}",
                question=q.query,
                category=meeting.domain,
                answer=q.answer,
                gold_labels=[str(i) for i in q.gold],
                unresolved_evidence=list(q.unresolved),
            )
            for index, q in enumerate(meeting.queries)
        ]
        _add_counts(
            counts,
            {
                "general queries (no span; not asked)": meeting.general_queries,
                "empty transcript turns (not stored)": meeting.empty_turns,
                "gold turns without text (not gold)": sum(q.empty_gold for q in meeting.queries),
                "spans outside the transcript": sum(len(q.unresolved) for q in meeting.queries),
            },
        )
        haystacks.append(
            Haystack(
                meeting.name,
                [meeting.session],
                questions,
                _metadata_labeler("index"),
                meeting.split,
            )
        )
    split = "halves are the split folders as distributed (train, val)"
    return Benchmark("qmsum", str(path), haystacks, QMSUM_DOMAINS, split, counts)


def load_friendsqa_bench(path: str | Path, kinds: Sequence[str] | None = None) -> Benchmark:
    """FriendsQA: one haystack per scene, asked after it; gold = every utterance an answer
    points at; categories are the question words. Halves alternate in scene title order."""
    wanted = {kind.lower() for kind in kinds} if kinds else None
    scenes = load_friendsqa(_existing(path))
    halves = alternate_halves([scene.title for scene in scenes])
    counts: dict[str, int] = {}
    haystacks = []
    for scene in scenes:
        questions = []
        for q in scene.questions:
            kind = question_word(q.qid, scene.title, q.question)
            if wanted is not None and kind not in wanted:
                continue
            questions.append(
                BenchQuestion(
                    qid=q.qid,
                    question=q.question,
                    category=kind,
                    answer=" | ".join(dict.fromkeys(q.answers)),
                    gold_labels=[str(uid) for uid in q.gold],
                    unresolved_evidence=list(q.unresolved),
                )
            )
        _add_counts(
            counts,
            {"answers naming no utterance": sum(len(q.unresolved_evidence) for q in questions)},
        )
        haystacks.append(
            Haystack(
                scene.title,
                [scene.session],
                questions,
                _metadata_labeler("uid"),
                halves[scene.title],
            )
        )
    split = "halves alternate in scene title order (A: 1st, 3rd, ...; B: 2nd, 4th, ...)"
    return Benchmark("friendsqa", str(path), haystacks, FRIENDSQA_KINDS, split, counts)


def alternate_halves(names: Sequence[str]) -> dict[str, str]:
    """Each name's half, "A" or "B", alternating in sorted name order: a split by
    conversation that does not depend on the order of the files."""
    return {name: HALVES[index % 2] for index, name in enumerate(sorted(set(names)))}


def _add_counts(total: dict[str, int], counts: dict[str, int]) -> None:
    for key, value in counts.items():
        total[key] = total.get(key, 0) + value


def _metadata_labeler(key: str) -> TurnLabeler:
    """Labels a turn by the value of one key of its metadata."""

    def label(session_id: str, position: int, turn: TurnInput) -> Sequence[str]:
        value = (turn.metadata or {}).get(key)
        return [str(value)] if value is not None else []

    return label


def _turn_key_label(session_id: str, position: int, turn: TurnInput) -> Sequence[str]:
    metadata = turn.metadata or {}
    if "session_uuid" not in metadata or "turn" not in metadata:
        return []
    return [turn_key(str(metadata["session_uuid"]), int(metadata["turn"]))]


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
