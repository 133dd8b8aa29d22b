"""LoCoMo benchmark conversations and questions.

Accepts a folder of per-conversation files (`speaker_a`, `speaker_b`, `session_N`,
`session_N_date_time`, `qa`), one such file, or the single-file `locomo10.json` (a list of
`{sample_id, conversation: {...}, qa: [...]}`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
# "D3:12", and the malformed "D:11:26" / "d30:05" forms found in the data.
_DIA_ID = re.compile(r"D:?(\d+):(\d+)", re.IGNORECASE)
_WHAT = "LoCoMo data (a conversation with speaker_a, speaker_b, session_N, qa; or locomo10.json)"


@dataclass(frozen=True, slots=True)
class LocomoQuestion:
    """A LoCoMo question. `evidence` holds normalized dia ids ("D3:12") of turns in the
    conversation; `unresolved_evidence` the raw entries that could not be parsed or name no
    turn. Category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial."""

    question: str
    answer: str
    category: int
    evidence: list[str]
    unresolved_evidence: list[str]
    adversarial_answer: str | None = None


@dataclass(frozen=True, slots=True)
class LocomoConversation:
    """One LoCoMo conversation: sessions in order, each turn's `dia_id` in its metadata."""

    sample_id: str
    speakers: tuple[str, ...]
    sessions: list[SessionInput]
    questions: list[LocomoQuestion]

    def dia_locations(self) -> dict[str, tuple[str, int]]:
        """Map each dia id to (session_id, position of the turn within its session)."""
        return {
            turn.metadata["dia_id"]: (str(session.session_id), position)
            for session in self.sessions
            for position, turn in enumerate(session.turns)
            if turn.metadata
        }


def load_locomo(path: str | Path) -> list[LocomoConversation]:
    """Load LoCoMo conversations from a folder of .json files, one file, or locomo10.json.

    Raises InputError naming the file when its structure is not LoCoMo's.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.json"), key=_natural_key)
        if not files:
            raise InputError(f"{path} holds no .json files; expected {_WHAT}")
    else:
        files = [path]
    conversations = []
    for file in files:
        conversations.extend(_conversations_in(load_json(file, what=_WHAT), file))
    return conversations


def parse_evidence(entries: Iterable[object]) -> tuple[list[str], list[str]]:
    """Normalize LoCoMo evidence entries to dia ids; return (dia ids, unparsable pieces).

    An entry may hold several ids ("D8:6; D9:17", "D9:1 D4:4"); ids are normalized
    ("D:11:26" -> "D11:26", "d30:05" -> "D30:5") and de-duplicated in order.
    """
    parsed: list[str] = []
    unresolved: list[str] = []
    for entry in entries:
        if not isinstance(entry, str):
            unresolved.append(str(entry))
            continue
        tokens = [token for token in _EVIDENCE_SEPARATORS.split(entry) if token]
        if not tokens:
            unresolved.append(entry)
        for token in tokens:
            match = _DIA_ID.fullmatch(token)
            if match is None:
                unresolved.append(token)
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id not in parsed:
                parsed.append(dia_id)
    return parsed, unresolved


def _conversations_in(data: Any, file: Path) -> list[LocomoConversation]:
    if isinstance(data, list):
        return [_sample(item, file, f"{file.stem}-{index}") for index, item in enumerate(data)]
    if isinstance(data, dict) and "conversation" in data:
        return [_sample(data, file, file.stem)]
    if isinstance(data, dict) and "speaker_a" in data:
        sample_id = data.get("sample_id") or file.stem
        return [_conversation(data, data.get("qa"), str(sample_id), file)]
    raise InputError(
        f"{file} does not look like LoCoMo data: got {describe(data)}; expected {_WHAT}"
    )


def _sample(item: object, file: Path, default_id: str) -> LocomoConversation:
    if not isinstance(item, dict):
        raise InputError(f"{file}: sample {default_id} is {describe(item)}, not an object")
    sample_id = str(item.get("sample_id") or default_id)
    conversation = item.get("conversation")
    if not isinstance(conversation, dict):
        raise InputError(f"{file}: sample {sample_id} has no 'conversation' object")
    return _conversation(conversation, item.get("qa"), sample_id, file)


def _conversation(
    data: dict[str, Any], qa: object, sample_id: str, file: Path
) -> LocomoConversation:
    where = f"{file}: conversation {sample_id}"
    speakers = tuple(str(data[key]) for key in ("speaker_a", "speaker_b") if data.get(key))
    sessions = _sessions(data, sample_id, where)
    if not sessions:
        raise InputError(f"{where} has no session_N turn lists; expected {_WHAT}")
    if qa is None:
        qa = []
    if not isinstance(qa, list):
        raise InputError(f"{where}: 'qa' must be a list, got {describe(qa)}")
    dia_ids = {turn.metadata["dia_id"] for s in sessions for turn in s.turns if turn.metadata}
    questions = [_question(entry, dia_ids, f"{where}, qa {i}") for i, entry in enumerate(qa)]
    unresolved = sum(len(q.unresolved_evidence) for q in questions)
    if unresolved:
        logger.info("%s: %d evidence entries could not be resolved", where, unresolved)
    return LocomoConversation(sample_id, speakers, sessions, questions)


def _sessions(data: dict[str, Any], sample_id: str, where: str) -> list[SessionInput]:
    numbered = []
    for key, turns in data.items():
        match = _SESSION_KEY.fullmatch(key)
        if match is None or not turns:
            continue
        if not isinstance(turns, list):
            raise InputError(f"{where}: '{key}' must be a list of turns, got {describe(turns)}")
        numbered.append((int(match[1]), turns))
    sessions = []
    for number, turns in sorted(numbered, key=lambda pair: pair[0]):
        date = data.get(f"session_{number}_date_time")
        timestamp = date if isinstance(date, str) and date.strip() else None
        session_where = f"{where}, session_{number}"
        sessions.append(
            SessionInput(
                session_id=f"{sample_id}:session_{number}",
                turns=[
                    _turn(turn, timestamp, f"{session_where}[{i}]") for i, turn in enumerate(turns)
                ],
            )
        )
    return sessions


def _turn(turn: object, timestamp: str | None, where: str) -> TurnInput:
    if not isinstance(turn, dict):
        raise InputError(f"{where} is {describe(turn)}, not a turn object")
    text, speaker, dia_id = turn.get("text"), turn.get("speaker"), turn.get("dia_id")
    if not isinstance(text, str) or not isinstance(speaker, str) or not isinstance(dia_id, str):
        raise InputError(f"{where}: a turn needs string 'text', 'speaker' and 'dia_id'")
    metadata: dict[str, Any] = {"dia_id": dia_id}
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shared an image: {caption}]"
        metadata["blip_caption"] = caption
    return TurnInput(
        text=text, speaker=speaker, role="other", timestamp=timestamp, metadata=metadata
    )


def _question(entry: object, dia_ids: set[str], where: str) -> LocomoQuestion:
    if not isinstance(entry, dict) or not isinstance(entry.get("question"), str):
        raise InputError(f"{where}: a qa entry needs a string 'question'")
    try:
        category = int(entry["category"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{where}: 'category' must be an integer 1-5") from exc
    raw_evidence = entry.get("evidence") or []
    if not isinstance(raw_evidence, list):
        raw_evidence = [raw_evidence]
    evidence, unresolved = parse_evidence(raw_evidence)
    unresolved.extend(dia_id for dia_id in evidence if dia_id not in dia_ids)
    answer = entry.get("answer")
    adversarial = entry.get("adversarial_answer")
    return LocomoQuestion(
        question=entry["question"],
        answer="" if answer is None else str(answer),
        category=category,
        evidence=[dia_id for dia_id in evidence if dia_id in dia_ids],
        unresolved_evidence=unresolved,
        adversarial_answer=None if adversarial is None else str(adversarial),
    )


def _natural_key(path: Path) -> tuple[int, int, str]:
    stem = path.stem
    return (0, int(stem), stem) if stem.isdigit() else (1, 0, stem)
