"""Reciprocal-rank fusion."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.fusion import (
    competition_ranks,
    reciprocal_rank_fusion,
)


def test_rrf_sums_reciprocal_ranks_across_rankers() -> None:
    fused = reciprocal_rank_fusion({"a": [0.9, 0.1, 0.5], "b": [1.0, 3.0, 2.0]}, k=60)
    assert fused == pytest.approx([1 / 61 + 1 / 63, 1 / 63 + 1 / 61, 1 / 62 + 1 / 62])


def test_rrf_weights_scale_each_ranker_and_default_to_one() -> None:
    fused = reciprocal_rank_fusion({"a": [2.0, 1.0], "b": [1.0, 2.0]}, k=0, weights={"a": 3.0})
    assert fused == pytest.approx([3 / 1 + 1 / 2, 3 / 2 + 1 / 1])


def test_rrf_ignores_a_ranker_weighted_zero() -> None:
    fused = reciprocal_rank_fusion({"a": [2.0, 1.0], "b": [1.0, 2.0]}, k=10, weights={"b": 0})
    assert fused == pytest.approx([1 / 11, 1 / 12])


def test_rrf_gives_tied_scores_the_same_rank() -> None:
    assert reciprocal_rank_fusion({"a": [1.0, 1.0, 0.0]}, k=1) == [0.5, 0.5, 1 / 4]


def test_rrf_ranks_nan_last() -> None:
    assert reciprocal_rank_fusion({"a": [math.nan, 0.0, -5.0]}, k=0) == [1 / 3, 1.0, 1 / 2]


def test_rrf_of_no_rankers_is_empty() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"a": []}) == []


def test_rrf_rejects_rankers_of_different_lengths() -> None:
    with pytest.raises(ValueError, match="different numbers"):
        reciprocal_rank_fusion({"a": [1.0], "b": [1.0, 2.0]})


@pytest.mark.parametrize("weights", [{"a": -1.0}, {"a": math.nan}])
def test_rrf_rejects_negative_or_nan_weights(weights: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="weight of ranker 'a'"):
        reciprocal_rank_fusion({"a": [1.0]}, weights=weights)


def test_competition_ranks_share_the_best_rank_of_a_tie() -> None:
    assert competition_ranks([5, 9, 5, 1]) == [2, 1, 2, 4]
    assert competition_ranks([]) == []


SCORES = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, 1.0, -1.0])


@st.composite
def rankers_and_permutation(draw: st.DrawFn) -> tuple[dict[str, list[float]], list[int]]:
    n = draw(st.integers(min_value=0, max_value=12))
    names = draw(st.lists(st.sampled_from("abcde"), min_size=1, max_size=4, unique=True))
    scores = {name: draw(st.lists(SCORES, min_size=n, max_size=n)) for name in names}
    permutation = draw(st.permutations(list(range(n))))
    return scores, permutation


@given(rankers_and_permutation(), st.integers(min_value=0, max_value=100))
def test_rrf_is_order_stable_under_candidate_permutation(
    case: tuple[dict[str, list[float]], list[int]], k: int
) -> None:
    scores, permutation = case
    fused = reciprocal_rank_fusion(scores, k=k)
    permuted = {name: [values[i] for i in permutation] for name, values in scores.items()}
    assert reciprocal_rank_fusion(permuted, k=k) == [fused[i] for i in permutation]


@given(rankers_and_permutation())
def test_rrf_is_deterministic_and_independent_of_ranker_order(
    case: tuple[dict[str, list[float]], list[int]],
) -> None:
    scores, _ = case
    reversed_scores = dict(reversed(list(scores.items())))
    fused = reciprocal_rank_fusion(scores)
    assert fused == reciprocal_rank_fusion(scores)
    assert fused == reciprocal_rank_fusion(reversed_scores)
    assert all(0 < value <= len(scores) / 61 for value in fused)
