"""training/pairs.py: the (question, passage, label) rows built from mined rankings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from training.pairs import (
    MinedQuestion,
    build_pairs,
    counts,
    in_fold,
    listwise_rows,
    question_pairs,
    read_mined,
    read_sets,
)


def passage(rank: int | None, turn: int, text: str, gold: bool = False) -> dict[str, Any]:
    return {"rank": rank, "turn": turn, "span": [0, len(text)], "text": text, "gold": gold}


def mined(passages: list[dict[str, Any]], gold: list[int], half: str = "A") -> MinedQuestion:
    record = {
        "id": "conv:q1",
        "haystack": "conv",
        "half": half,
        "question": "Where is the launch party?",
        "gold": gold,
        "passages": passages,
    }
    return MinedQuestion("sample", record)


def test_a_gold_turn_gives_its_best_ranked_passage_and_its_other_passages_are_left_out() -> None:
    question = mined(
        [
            passage(0, 5, "Bo: the party is at the boathouse"),
            passage(1, 7, "Ann: second slice of a long reply", gold=True),
            passage(2, 9, "Cy: unrelated"),
            passage(4, 7, "Ann: first slice of a long reply", gold=True),
        ],
        gold=[7],
    )

    pairs = question_pairs(question)

    assert [(p.passage, p.label) for p in pairs] == [
        ("Ann: second slice of a long reply", 1.0),
        ("Bo: the party is at the boathouse", 0.0),
        ("Cy: unrelated", 0.0),
    ]


def test_gold_recall_never_found_is_a_positive_and_negatives_follow_the_ranking() -> None:
    ranked = [passage(rank, 100 + rank, f"Bo: message {rank}") for rank in range(6)]
    question = mined([*reversed(ranked), passage(None, 3, "Ann: at the boathouse", gold=True)], [3])

    pairs = question_pairs(question, negatives=3)

    assert [p.passage for p in pairs] == [
        "Ann: at the boathouse",
        "Bo: message 0",
        "Bo: message 1",
        "Bo: message 2",
    ]
    assert [p.label for p in pairs] == [1.0, 0.0, 0.0, 0.0]


def test_a_negative_with_a_positive_s_text_or_a_repeated_text_is_dropped() -> None:
    question = mined(
        [
            passage(0, 1, "Ann: ok", gold=True),
            passage(1, 2, "Ann: ok"),  # the same words said again: not a negative
            passage(2, 3, "Bo: lol"),
            passage(3, 4, "Bo: lol"),
        ],
        gold=[1],
    )

    assert [(p.passage, p.label) for p in question_pairs(question)] == [
        ("Ann: ok", 1.0),
        ("Bo: lol", 0.0),
    ]


def test_positives_are_capped_best_ranked_first_and_no_gold_gives_no_pairs() -> None:
    spans = [passage(rank, rank, f"turn {rank}", gold=True) for rank in range(6)]

    capped = question_pairs(mined(spans, gold=list(range(6))), max_positives=2)

    assert [p.passage for p in capped] == ["turn 0", "turn 1"]
    assert question_pairs(mined([passage(0, 1, "Bo: hi")], gold=[])) == []


@pytest.mark.parametrize(
    ("half", "fold", "member"),
    [("A", "A", True), ("B", "A", False), ("train", "A", True), ("val", "B", True),
     ("val", "A", False), ("B", "all", True)],
)  # fmt: skip
def test_folds_hold_the_halves_of_every_set_qmsum_s_split_folders_included(
    half: str, fold: str, member: bool
) -> None:
    assert in_fold(mined([], [], half=half), fold) is member


def test_pairs_are_shuffled_reproducibly_and_counted_per_set() -> None:
    questions = [
        mined([passage(0, 1, f"gold {i}", gold=True), passage(1, 2, f"other {i}")], [1], half)
        for i, half in enumerate("ABAB")
    ]

    first = build_pairs(questions, fold="A", seed=3)

    assert first == build_pairs(questions, fold="A", seed=3)
    assert {p.passage for p in first} == {"gold 0", "other 0", "gold 2", "other 2"}
    assert counts(first) == {"sample": {"questions": 1, "positives": 2, "negatives": 2}}


def test_mined_folders_are_read_by_set_name_and_bad_lines_are_named(tmp_path: Path) -> None:
    folder = tmp_path / "memgallery"
    folder.mkdir()
    record = mined([passage(0, 1, "x", gold=True)], [1]).record
    (folder / "ranking.jsonl").write_text(json.dumps(record) + "\n\n", encoding="utf-8")
    (tmp_path / "qmsum").mkdir()

    [question] = read_sets([folder, tmp_path / "qmsum"], exclude=["qmsum"])

    assert question.dataset == "memgallery" and question.record["id"] == "conv:q1"
    with pytest.raises(FileNotFoundError, match="--keep-ranking"):
        read_mined(tmp_path / "qmsum")
    (folder / "ranking.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"ranking.jsonl:1: not JSON"):
        read_mined(folder)


def test_listwise_rows_group_each_question_s_passages_with_their_labels() -> None:
    questions = [
        mined([passage(0, 1, f"gold {i}", gold=True), passage(1, 2, f"other {i}")], [1], "A")
        for i in range(2)
    ]
    questions[1].record["id"] = "conv:q2"

    rows = listwise_rows(build_pairs(questions, seed=0))

    assert len(rows) == 2
    for row in rows:
        assert dict(zip(row["docs"], row["labels"], strict=True)) == {
            d: 1.0 if d.startswith("gold") else 0.0 for d in row["docs"]
        }
