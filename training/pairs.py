"""Ranker training data from mined rankings: (question, passage, label) rows.

`smartsearch-mcp bench <set> --keep-ranking N` writes, for every question, the best N passages
the project's own recall ranked (with the exact text the rankers read: "speaker: text") and the
question's gold passages. Here each question becomes

- positives: for each gold turn, its best-ranked passage (a long turn is split into passages;
  its other passages are left out, neither positive nor negative: they may or may not hold the
  answer), or the turn's text when recall never found it — at most `max_positives`, the
  best-ranked first (QMSum marks whole discussion spans as gold: the first few are the ones a
  ranker can be asked to put first);
- hard negatives: the best-ranked passages that are not gold, in rank order, at most
  `negatives`, none whose text equals a positive's.

A fold is a set of halves of the split by conversation (`--half` of the bench): a model
trained on one fold is scored only on the conversations of the other.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The bench's halves of each set, by the fold that holds them: QMSum's halves are its
# distributed split folders.
FOLDS: dict[str, frozenset[str]] = {
    "A": frozenset({"A", "train"}),
    "B": frozenset({"B", "val"}),
}


@dataclass(frozen=True, slots=True)
class Pair:
    """One training row: the question, the passage text as the rankers read it, relevant or
    not, and where it came from."""

    question: str
    passage: str
    label: float
    dataset: str
    question_id: str


@dataclass(frozen=True, slots=True)
class MinedQuestion:
    """One line of a ranking.jsonl, with the name of the set it was mined from."""

    dataset: str
    record: dict[str, Any]

    @property
    def half(self) -> str | None:
        return self.record.get("half")


def read_mined(path: str | Path, dataset: str | None = None) -> list[MinedQuestion]:
    """The questions of one ranking.jsonl (or of a bench results folder holding one); the
    dataset name defaults to the folder's name."""
    file = Path(path)
    if file.is_dir():
        file = file / "ranking.jsonl"
    if not file.is_file():
        raise FileNotFoundError(
            f"{file}: no mined rankings; run `smartsearch-mcp bench <set> --keep-ranking 30`"
        )
    name = dataset or file.parent.name
    questions = []
    with file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{file}:{number}: not JSON ({exc})") from exc
            questions.append(MinedQuestion(name, record))
    return questions


def in_fold(question: MinedQuestion, fold: str) -> bool:
    """Whether the question's conversation belongs to `fold` ("A", "B" or "all")."""
    if fold == "all":
        return True
    return question.half in FOLDS[fold]


def question_pairs(
    question: MinedQuestion, *, negatives: int = 15, max_positives: int = 4
) -> list[Pair]:
    """The positives and hard negatives of one mined question (none without gold)."""
    record = question.record
    gold = set(record.get("gold") or ())
    if not gold:
        return []
    passages = sorted(record["passages"], key=_rank_order)
    positives: dict[int, str] = {}
    for passage in passages:
        if passage["gold"] and passage["turn"] not in positives:
            positives[passage["turn"]] = passage["text"]
    kept = list(positives.values())[:max_positives]
    positive_texts = set(kept)
    negative_texts: list[str] = []
    for passage in passages:
        if len(negative_texts) >= negatives:
            break
        text = passage["text"]
        if passage["gold"] or passage["rank"] is None or text in positive_texts:
            continue
        if text not in negative_texts:
            negative_texts.append(text)
    ask, qid, name = record["question"], record["id"], question.dataset
    return [Pair(ask, text, 1.0, name, qid) for text in kept] + [
        Pair(ask, text, 0.0, name, qid) for text in negative_texts
    ]


def build_pairs(
    questions: Iterable[MinedQuestion],
    *,
    fold: str = "all",
    negatives: int = 15,
    max_positives: int = 4,
    seed: int = 0,
) -> list[Pair]:
    """Every pair of the questions in `fold`, shuffled with `seed`."""
    pairs = [
        pair
        for question in questions
        if in_fold(question, fold)
        for pair in question_pairs(question, negatives=negatives, max_positives=max_positives)
    ]
    random.Random(seed).shuffle(pairs)
    return pairs


def read_sets(folders: Sequence[str | Path], exclude: Sequence[str] = ()) -> list[MinedQuestion]:
    """The mined questions of every folder whose set is not excluded (by folder name)."""
    return [
        question
        for folder in folders
        if Path(folder).name not in set(exclude)
        for question in read_mined(folder)
    ]


def counts(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """Questions, positives and negatives per dataset."""
    table: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for pair in pairs:
        row = table.setdefault(pair.dataset, {"questions": 0, "positives": 0, "negatives": 0})
        row["positives" if pair.label > 0 else "negatives"] += 1
        if pair.question_id not in seen:
            seen.add(pair.question_id)
            row["questions"] += 1
    return table


def _rank_order(passage: dict[str, Any]) -> tuple[int, int]:
    rank = passage.get("rank")
    return (1, 0) if rank is None else (0, int(rank))


def listwise_rows(pairs: Iterable[Pair]) -> list[dict[str, Any]]:
    """The pairs grouped by question, as listwise losses read them (question, its passages
    and their labels), in the order the questions first appear."""
    rows: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        row = rows.setdefault(
            pair.question_id, {"question": pair.question, "docs": [], "labels": []}
        )
        row["docs"].append(pair.passage)
        row["labels"].append(pair.label)
    return list(rows.values())


def iter_rows(pairs: Iterable[Pair]) -> Iterator[dict[str, Any]]:
    """The pairs as the trainer's columns (question, passage, label)."""
    for pair in pairs:
        yield {"question": pair.question, "passage": pair.passage, "label": pair.label}
