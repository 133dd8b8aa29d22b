"""Benchmark data become haystacks with gold labels (importers tested on small slices)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from smartsearch_mcp.bench.datasets import (
    load_beam_bench,
    load_locomo_bench,
    load_longmemeval_bench,
)
from smartsearch_mcp.types import InputError

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_locomo_questions_keep_categories_1_to_4_and_tolerant_evidence() -> None:
    benchmark = load_locomo_bench(FIXTURES / "locomo")

    (haystack,) = benchmark.haystacks
    assert [q.category for q in haystack.questions] == [
        "temporal",
        "multi-hop",
        "temporal",
        "multi-hop",
        "single-hop",
    ]
    by_id = {q.qid: q for q in haystack.questions}
    assert by_id["26:q0"].gold_labels == ["D1:3"]
    assert by_id["26:q4"].gold_labels == []  # "D8:6; D9:17" names no turn of the slice
    assert by_id["26:q4"].unresolved_evidence == ["D8:6", "D9:17"]
    hand_made = by_id["26:q5"]
    assert hand_made.gold_labels == ["D1:3", "D1:4", "D1:5", "D2:2", "D1:1"]
    assert hand_made.unresolved_evidence == ["see", "D30:5"]


def test_locomo_questions_are_asked_at_the_last_session_date() -> None:
    (haystack,) = load_locomo_bench(FIXTURES / "locomo").haystacks

    assert haystack.questions[0].reference == datetime(2023, 5, 25, 13, 14)


def test_locomo_category_5_is_included_on_request() -> None:
    (haystack,) = load_locomo_bench(FIXTURES / "locomo", categories=(5,)).haystacks

    assert [q.category for q in haystack.questions] == ["adversarial"]


def test_locomo_turns_are_labelled_by_dia_id() -> None:
    (haystack,) = load_locomo_bench(FIXTURES / "locomo").haystacks
    session = haystack.sessions[0]

    assert haystack.labeler(str(session.session_id), 2, session.turns[2]) == ["D1:3"]


def test_beam_gold_is_the_source_chat_message_ids() -> None:
    benchmark = load_beam_bench(FIXTURES / "beam")

    (haystack,) = benchmark.haystacks
    abilities = {q.category for q in haystack.questions}
    assert "abstention" in abilities
    for question in haystack.questions:
        if question.category == "abstention":
            assert question.gold_labels == []
        else:
            assert question.gold_labels and all(label.isdigit() for label in question.gold_labels)
    turn = haystack.sessions[0].turns[0]
    assert haystack.labeler("any", 0, turn) == [str(turn.metadata["message_id"])]


def test_beam_abilities_filter_questions() -> None:
    benchmark = load_beam_bench(FIXTURES / "beam", abilities=["temporal_reasoning"])

    assert {q.category for q in benchmark.haystacks[0].questions} == {"temporal_reasoning"}


def test_longmemeval_gold_is_the_has_answer_turns_and_the_reference_the_question_date() -> None:
    benchmark = load_longmemeval_bench(FIXTURES / "longmemeval" / "longmemeval_s_slice.json")

    (haystack,) = benchmark.haystacks
    (question,) = haystack.questions
    assert question.category == "single-session-user"
    assert question.reference == datetime(2023, 5, 30, 23, 40)
    assert question.gold_labels
    assert all(label.startswith("answer_280352e9#") for label in question.gold_labels)
    session = haystack.sessions[0]
    assert haystack.labeler(str(session.session_id), 1, session.turns[1]) == [
        f"{session.session_id}#1"
    ]


def test_longmemeval_sample_record_with_its_whole_haystack(shared_data: Any) -> None:
    path = shared_data("longmemeval-sample/longmemeval_s_one_question.json")

    (haystack,) = load_longmemeval_bench(path).haystacks

    assert len(haystack.sessions) == 53
    assert sum(len(s.turns) for s in haystack.sessions) == 550
    assert haystack.questions[0].gold_labels


@pytest.mark.parametrize("loader", [load_locomo_bench, load_beam_bench, load_longmemeval_bench])
def test_a_missing_path_is_a_clear_error(loader: object, tmp_path: object) -> None:
    with pytest.raises(InputError, match="no such file or folder"):
        loader(f"{tmp_path}/nowhere")  # type: ignore[operator]
