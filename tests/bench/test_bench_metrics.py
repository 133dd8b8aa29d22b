"""Metric functions on hand-computed cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.bench.metrics import (
    evidence_recall,
    latency_summary,
    mean,
    ordered_categories,
    percentile,
    summarize,
    summarize_halves,
    word_count,
)


def test_evidence_recall_is_the_share_of_gold_turns_found() -> None:
    assert evidence_recall([1, 2, 3, 4], [2, 4, 9]) == 0.5
    assert evidence_recall([7], [7]) == 1.0
    assert evidence_recall([7], []) == 0.0


def test_evidence_recall_counts_each_gold_turn_once() -> None:
    assert evidence_recall([1, 1, 2], [1, 1, 1]) == 0.5


def test_evidence_recall_is_none_without_gold() -> None:
    assert evidence_recall([], [1, 2]) is None


def test_word_count_splits_on_any_whitespace() -> None:
    assert word_count("  one two\nthree\tfour  ") == 4
    assert word_count("") == 0


def test_mean_ignores_none_and_is_none_for_nothing() -> None:
    assert mean([1.0, None, 0.0]) == 0.5
    assert mean([None]) is None
    assert mean([]) is None


def test_percentile_interpolates_linearly_like_numpy() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == 25.0
    assert percentile(values, 95) == pytest.approx(38.5)
    assert percentile(values, 0) == 10.0
    assert percentile(values, 100) == 40.0
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) is None


def test_percentile_rejects_out_of_range_q() -> None:
    with pytest.raises(ValueError, match=r"0\.\.100"):
        percentile([1.0], 101)


def test_latency_summary_reports_p50_p95_mean_and_count() -> None:
    assert latency_summary([1.0, 3.0]) == {"p50": 2.0, "p95": 2.9, "mean": 2.0, "n": 2}


def test_ordered_categories_follow_the_given_order_then_appearance() -> None:
    outcomes = [{"category": "x"}, {"category": "b"}, {"category": "a"}]
    assert ordered_categories(outcomes, ["a", "b", "c"]) == ["a", "b", "x"]


def outcome(category: str, gold: list[int], recall: dict[str, float | None], **extra: Any) -> dict:
    return {
        "category": category,
        "gold": gold,
        "candidate_recall": extra.get("candidate_recall"),
        "candidates": extra.get("candidates", 10),
        "full_context_tokens": 1000,
        "systems": {
            "smartsearch": {
                budget: {"recall": value, "tokens": int(budget) // 2, "words": 10}
                for budget, value in recall.items()
            },
            "full-context": {
                "all": {"recall": 1.0 if gold else None, "tokens": 1000, "words": 800}
            },
        },
        "latency_ms": {"end_to_end": extra.get("ms", 10.0)},
        "qa": extra.get("qa"),
    }


def test_summarize_averages_per_category_and_overall_excluding_questions_without_gold() -> None:
    outcomes = [
        outcome("temporal", [1], {"100": 1.0, "200": 1.0}, candidate_recall=1.0, ms=10.0),
        outcome("temporal", [2, 3], {"100": 0.0, "200": 0.5}, candidate_recall=0.5, ms=30.0),
        outcome("multi-hop", [4], {"100": 1.0, "200": 1.0}, candidate_recall=1.0, ms=20.0),
        outcome("multi-hop", [], {"100": None, "200": None}, ms=40.0),
    ]

    summary = summarize(outcomes, [100, 200], ["multi-hop", "temporal"])

    assert summary["categories"] == ["multi-hop", "temporal"]
    assert summary["questions"] == {"multi-hop": 2, "temporal": 2, "overall": 4}
    assert summary["with_gold"] == {"multi-hop": 1, "temporal": 2, "overall": 3}
    assert summary["excluded_no_gold"]["overall"] == 1
    recall = summary["recall"]["smartsearch"]
    assert recall["100"] == {"multi-hop": 1.0, "temporal": 0.5, "overall": pytest.approx(2 / 3)}
    assert recall["200"] == {"multi-hop": 1.0, "temporal": 0.75, "overall": pytest.approx(2.5 / 3)}
    assert summary["recall"]["full-context"]["all"]["overall"] == 1.0
    assert summary["candidate_recall"]["temporal"] == 0.75
    assert summary["tokens"]["smartsearch"]["200"] == 100
    assert summary["token_ratio"]["smartsearch"]["200"] == pytest.approx(0.1)
    assert summary["full_context_tokens"] == 1000
    assert summary["latency_ms"]["end_to_end"]["p50"] == 25.0
    assert summary["qa"] is None


def found(gold: list[int], returned: list[int], half: str | None = None) -> dict[str, Any]:
    hits = [i for i in gold if i in returned]
    return {
        "category": "c",
        "half": half,
        "gold": gold,
        "systems": {
            "smartsearch": {
                "100": {"recall": evidence_recall(gold, returned), "found": hits, "tokens": 1}
            }
        },
    }


def test_summarize_reports_the_share_of_questions_with_at_least_one_gold_turn_found() -> None:
    outcomes = [found([1, 2, 3, 4], [1]), found([5, 6], []), found([7], [7]), found([], [8])]

    summary = summarize(outcomes, [100])

    assert summary["recall"]["smartsearch"]["100"]["overall"] == pytest.approx(1.25 / 3)
    assert summary["found_any"]["smartsearch"]["100"]["overall"] == pytest.approx(2 / 3)


def test_each_half_is_summarized_on_its_own_questions() -> None:
    outcomes = [
        found([1, 2], [1], half="B"),
        found([3], [3], half="A"),
        found([4], [], half="B"),
    ]

    halves = summarize_halves(outcomes, [100])

    assert list(halves) == ["A", "B"]
    assert halves["A"]["recall"]["smartsearch"]["100"]["overall"] == 1.0
    assert halves["B"]["recall"]["smartsearch"]["100"]["overall"] == 0.25
    assert halves["B"]["found_any"]["smartsearch"]["100"]["overall"] == 0.5
    assert halves["B"]["questions"]["overall"] == 2


def test_without_halves_there_is_nothing_to_summarize_per_half() -> None:
    assert summarize_halves([found([1], [1])], [100]) == {}


def test_summarize_reports_what_a_cascades_first_pass_keeps_of_the_candidates_gold() -> None:
    def with_cut(gold: list[int], among: list[int], kept: dict[str, list[int]]) -> dict:
        return {
            **outcome("temporal", gold, {"100": 1.0}),
            "candidate_found": among,
            "first_pass_found": kept,
        }

    outcomes = [
        with_cut([1, 2], [1, 2], {"30": [1], "60": [1, 2]}),
        with_cut([3, 4], [3], {"30": [], "60": [3]}),  # 4 was not even a candidate
        with_cut([], [], {"30": [], "60": []}),  # no gold: no recall, nothing to keep
    ]

    summary = summarize(outcomes, [100])

    recall = summary["first_pass_recall"]
    assert list(recall) == ["30", "60"]
    assert recall["30"]["overall"] == pytest.approx((0.5 + 0.0) / 2)
    assert recall["60"]["overall"] == pytest.approx((1.0 + 0.5) / 2)
    # of the 3 gold turns among the candidates, the best 30 keep 1 and the best 60 all 3
    assert summary["first_pass_survival"] == {"30": pytest.approx(1 / 3), "60": 1.0}
    assert "first_pass_recall" not in summarize([outcome("temporal", [1], {"100": 1.0})], [100])


def test_summarize_reports_qa_accuracy_per_category() -> None:
    outcomes = [
        outcome("a", [1], {"100": 1.0}, qa={"correct": True}),
        outcome("a", [1], {"100": 1.0}, qa={"correct": False}),
        outcome("b", [1], {"100": 1.0}, qa={"correct": True}),
    ]

    qa = summarize(outcomes, [100])["qa"]

    assert qa["a"] == {"accuracy": 0.5, "n": 2}
    assert qa["overall"]["accuracy"] == pytest.approx(2 / 3)


@given(st.sets(st.integers(0, 50)), st.lists(st.integers(0, 50)))
def test_evidence_recall_is_a_share(gold: set[int], found: list[int]) -> None:
    value = evidence_recall(gold, found)

    assert value is None if not gold else 0.0 <= value <= 1.0


@given(st.lists(st.floats(0, 1e6), min_size=1), st.floats(0, 100))
def test_percentiles_lie_within_the_values(values: list[float], q: float) -> None:
    result = percentile(values, q)

    assert result is not None
    assert min(values) - 1e-6 <= result <= max(values) + 1e-6  # up to float rounding
