"""FriendsQA: scenes of the TV show Friends with reading-comprehension questions.

SQuAD-like: `{data: [{title: "s03_e21_c03", paragraphs: [{"utterances:": [{uid, speakers,
utterance}], qas: [{id, question, answers: [{answer_text, utterance_id, ...}]}]}]}]}` — the key
is literally "utterances:", colon included ("utterances" is accepted too). A question's gold
is the set of its answers' `utterance_id`s (the utterances' `uid`s); "#NOTE#" as a speaker
marks a stage direction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartsearch_mcp.importers.json_files import describe, load_json
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

logger = logging.getLogger(__name__)

_WHAT = "FriendsQA data ({data: [{title, paragraphs: [{'utterances:', qas}]}]})"
UTTERANCES_KEYS = ("utterances:", "utterances")
NOTE_SPEAKER = "#NOTE#"


@dataclass(frozen=True, slots=True)
class FriendsQAQuestion:
    """A question: `gold` the uids of the utterances its answers are in (in answer order,
    once each), `unresolved` the answers' utterance ids that name no utterance."""

    qid: str
    question: str
    answers: list[str]
    gold: list[int]
    unresolved: list[str]


@dataclass(frozen=True, slots=True)
class FriendsQAScene:
    """One scene: its utterances as one session (each turn's uid in its metadata)."""

    title: str
    session: SessionInput
    questions: list[FriendsQAQuestion]


def load_friendsqa(path: str | Path) -> list[FriendsQAScene]:
    """Load the scenes of a FriendsQA file (friendsqa_dev.json, ...), in file order; a scene
    with several paragraphs gives one scene per paragraph. Raises InputError when the
    structure is not FriendsQA's."""
    file = Path(path)
    data = load_json(file, what=_WHAT)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise InputError(f"{file}: got {describe(data)}; expected {_WHAT}")
    scenes = []
    for index, entry in enumerate(data["data"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("paragraphs"), list):
            raise InputError(f"{file}, data[{index}]: an entry needs 'title' and 'paragraphs'")
        title = str(entry.get("title") or f"scene-{index}")
        paragraphs = entry["paragraphs"]
        for number, paragraph in enumerate(paragraphs):
            name = title if len(paragraphs) == 1 else f"{title}#{number}"
            scenes.append(_scene(paragraph, name, f"{file}, {name}"))
    unresolved = sum(len(q.unresolved) for s in scenes for q in s.questions)
    if unresolved:
        logger.info("%s: %d answers name no utterance", file, unresolved)
    return scenes


def _scene(paragraph: object, title: str, where: str) -> FriendsQAScene:
    if not isinstance(paragraph, dict):
        raise InputError(f"{where}: a paragraph must be an object, got {describe(paragraph)}")
    utterances = next((paragraph[k] for k in UTTERANCES_KEYS if k in paragraph), None)
    if not isinstance(utterances, list):
        raise InputError(f"{where}: no 'utterances:' list; expected {_WHAT}")
    turns = [_turn(utterance, f"{where}, utterance {i}") for i, utterance in enumerate(utterances)]
    kept = [turn for turn in turns if turn is not None]
    uids = {turn.metadata["uid"] for turn in kept if turn.metadata}
    questions = [
        _question(qa, uids, f"{where}, question {i}")
        for i, qa in enumerate(paragraph.get("qas") or [])
    ]
    return FriendsQAScene(title, SessionInput(session_id=f"friends-{title}", turns=kept), questions)


def _turn(utterance: object, where: str) -> TurnInput | None:
    if not isinstance(utterance, dict) or not isinstance(utterance.get("utterance"), str):
        raise InputError(f"{where}: an utterance needs a string 'utterance'")
    uid = utterance.get("uid")
    if isinstance(uid, bool) or not isinstance(uid, int):
        raise InputError(f"{where}: an utterance needs an integer 'uid', got {uid!r}")
    text = utterance["utterance"]
    if not text.strip():
        return None
    raw = utterance.get("speakers")
    speakers = [str(s) for s in (raw if isinstance(raw, list) else [raw]) if s]
    named = [s for s in speakers if s != NOTE_SPEAKER]
    return TurnInput(
        text=text,
        speaker=" and ".join(named) or None,
        role="other",
        metadata={"uid": uid},
    )


def _question(qa: object, uids: set[int], where: str) -> FriendsQAQuestion:
    if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
        raise InputError(f"{where}: a qa entry needs a string 'question'")
    gold: list[int] = []
    unresolved: list[str] = []
    texts: list[str] = []
    for answer in qa.get("answers") or []:
        if not isinstance(answer, dict):
            unresolved.append(str(answer))
            continue
        texts.append(str(answer.get("answer_text") or ""))
        uid: Any = answer.get("utterance_id")
        if isinstance(uid, str) and uid.strip().isdigit():
            uid = int(uid)
        if isinstance(uid, int) and not isinstance(uid, bool) and uid in uids:
            if uid not in gold:
                gold.append(uid)
        else:
            unresolved.append(str(uid))
    return FriendsQAQuestion(
        qid=str(qa.get("id") or where),
        question=qa["question"],
        answers=texts,
        gold=gold,
        unresolved=unresolved,
    )


def question_word(qid: str, title: str, question: str) -> str:
    """The question's kind ("who", "what", ...): from its id ("s01_e23_c06_What",
    "..._What_Paraphrased"), else the question's first word."""
    suffix = qid[len(title) + 1 :] if qid.startswith(f"{title}_") else ""
    word = suffix.split("_", 1)[0] if suffix else (question.split() or ["unknown"])[0]
    return word.lower()
