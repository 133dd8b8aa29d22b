"""Benchmark data become haystacks with gold labels (importers tested on small slices)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from smartsearch_mcp.bench.datasets import (
    alternate_halves,
    load_beam_bench,
    load_friendsqa_bench,
    load_locomo_bench,
    load_longmemeval_bench,
    load_memgallery_bench,
    load_qmsum_bench,
    load_realmem_bench,
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


def test_realmem_queries_are_asked_where_they_occur_with_their_two_hop_gold() -> None:
    benchmark = load_realmem_bench(FIXTURES / "realmem")

    ana, _ = benchmark.haystacks
    assert [q.asked_at for q in ana.questions] == [(2, 1), (2, 3), (2, 5)]
    first = ana.questions[0]
    assert first.qid == "Ana_Example:Q-0001"
    assert first.gold_labels == ["aaaa0001#0", "aaaa0001#2"]
    assert len(first.unresolved_evidence) == 2
    assert first.reference == datetime(2025, 3, 2)
    turn = ana.sessions[0].turns[2]
    assert ana.labeler(str(ana.sessions[0].session_id), 2, turn) == ["aaaa0001#2"]
    assert benchmark.counts["memory references"] == 9  # both personas
    assert benchmark.counts["memory points unresolved"] == 1


def test_realmem_categories_filter_queries() -> None:
    benchmark = load_realmem_bench(FIXTURES / "realmem", ["Dynamic Updating"])

    assert [len(h.questions) for h in benchmark.haystacks] == [0, 1]


def test_memgallery_rounds_label_both_turns_and_abstention_has_no_gold() -> None:
    benchmark = load_memgallery_bench(FIXTURES / "memgallery")

    pottery = benchmark.haystacks[2]
    session = pottery.sessions[0]
    labels = [pottery.labeler(str(session.session_id), i, t) for i, t in enumerate(session.turns)]
    assert labels == [["D1:1"], ["D1:1"], ["D1:2"], ["D1:2"]]
    assert [(q.category, q.gold_labels) for q in pottery.questions] == [
        ("FR", ["D1:1"]),
        ("VS", ["D2:2"]),
        ("MR", ["D2:1", "D1:2"]),
        ("AR", []),
    ]
    assert pottery.questions[2].unresolved_evidence == ["D7:3"]
    assert pottery.questions[0].reference == datetime(2024, 4, 20)  # after the last session
    assert benchmark.counts == {
        "questions without clue (abstention)": 1,
        "clue ids naming no round": 1,
    }


def test_qmsum_meetings_are_halved_by_their_split_folder_and_gold_is_the_spans() -> None:
    benchmark = load_qmsum_bench(FIXTURES / "qmsum")

    assert [(h.name, h.half) for h in benchmark.haystacks] == [
        ("TS1001a", "train"),
        ("Bro001", "val"),
        ("education_4", "val"),
    ]
    colour, battery = benchmark.haystacks[0].questions
    assert colour.gold_labels == ["1", "3", "6"]
    assert (colour.category, battery.unresolved_evidence) == ("product", ["['5', '40']"])
    assert benchmark.counts["general queries (no span; not asked)"] == 3
    assert benchmark.counts["gold turns without text (not gold)"] == 1
    assert [h.name for h in load_qmsum_bench(FIXTURES / "qmsum", ["committee"]).haystacks] == [
        "education_4"
    ]


def test_friendsqa_gold_is_a_set_of_utterances_and_categories_are_question_words() -> None:
    benchmark = load_friendsqa_bench(FIXTURES / "friendsqa" / "friendsqa_fixture.json")

    laundromat = benchmark.haystacks[0]
    pink, who = laundromat.questions
    assert (pink.category, pink.gold_labels) == ("what", ["1", "2"])
    assert (who.category, who.gold_labels, who.unresolved_evidence) == ("who", ["1"], ["7"])
    assert pink.answer == "my red sock | That sock | red sock"
    turn = laundromat.sessions[0].turns[3]
    assert laundromat.labeler("any", 3, turn) == ["3"]


@pytest.mark.parametrize(
    ("loader", "path", "halves"),
    [
        (load_realmem_bench, "realmem", {"Ana_Example": "A", "Bo_Example": "B"}),
        (
            load_memgallery_bench,
            "memgallery",
            {
                "Birdwatching_City_Parks": "A",
                "Community_Garden_Plots": "B",
                "Pottery_Weekend_Studio": "A",
            },
        ),
        (
            load_friendsqa_bench,
            "friendsqa/friendsqa_fixture.json",
            {"s01_e01_c01": "A", "s01_e01_c03": "B", "s01_e02_c01": "A"},
        ),
    ],
)
def test_halves_alternate_by_conversation_in_name_order(
    loader: Any, path: str, halves: dict[str, str]
) -> None:
    benchmark = loader(FIXTURES / path)

    assert {h.name: h.half for h in benchmark.haystacks} == halves
    assert benchmark.split


def test_alternate_halves_do_not_depend_on_the_order_names_come_in() -> None:
    names = ["c", "a", "d", "b", "e"]

    assert alternate_halves(names) == {"a": "A", "b": "B", "c": "A", "d": "B", "e": "A"}
    assert alternate_halves(list(reversed(names))) == alternate_halves(names)


@pytest.mark.slow
def test_the_shared_sets_as_distributed_resolve_as_their_readme_counts(shared_data: Any) -> None:
    realmem = load_realmem_bench(shared_data("realmem"))
    questions = [q for h in realmem.haystacks for q in h.questions]
    assert len(questions) == 980
    assert sum(bool(q.gold_labels) for q in questions) == 939
    assert realmem.counts["memory references resolved"] == 2056
    assert realmem.counts["memory points unresolved"] == 71
    memgallery = load_memgallery_bench(shared_data("memgallery"))
    questions = [q for h in memgallery.haystacks for q in h.questions]
    assert (len(questions), sum(len(q.gold_labels) for q in questions)) == (1293, 3099)
    friendsqa = load_friendsqa_bench(shared_data("friendsqa/friendsqa_dev.json"))
    questions = [q for h in friendsqa.haystacks for q in h.questions]
    assert (len(questions), sum(len(q.gold_labels) for q in questions)) == (1182, 1349)
    qmsum = load_qmsum_bench(shared_data("qmsum"))
    assert {h.half for h in qmsum.haystacks} == {"train", "val"}
    assert sum(len(h.questions) for h in qmsum.haystacks) == 1095 + 237
