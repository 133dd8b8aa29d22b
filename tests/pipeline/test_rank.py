"""Fusion of ranker scores and session support (stage 4), as pure functions."""

from __future__ import annotations

import itertools

from factories import make_passage
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.rank import add_session_support, fuse
from smartsearch_mcp.types import Candidate, Scored


def candidate(turn_id: int, session: str, lexical: float = 1.0) -> Candidate:
    passage = make_passage(turn_id, f"turn {turn_id}", session_id=session)
    return Candidate(passage=passage, lexical_score=lexical)


def scored(*items: tuple[int, str, float]) -> list[Scored]:
    return [Scored(candidate=candidate(i, s), score=x) for i, s, x in items]


def ids(items: list[Scored]) -> list[int]:
    return [s.candidate.passage.turn.id for s in items]


def test_fuse_sorts_by_reciprocal_rank_and_keeps_each_rankers_raw_score() -> None:
    cands = [candidate(1, "a"), candidate(2, "a"), candidate(3, "b")]
    out = fuse(cands, {"x": [0.1, 0.9, 0.5], "y": [0.2, 0.8, 0.9]}, rrf_k=1, weights={})
    assert ids(out) == [2, 3, 1]
    assert out[0].ranker_scores == {"x": 0.9, "y": 0.8}


def test_fuse_with_one_ranker_keeps_its_scores() -> None:
    out = fuse([candidate(1, "a"), candidate(2, "a")], {"x": [-3.0, 2.5]}, 60, {})
    assert [s.score for s in out] == [2.5, -3.0]


def test_a_passage_in_a_session_with_strong_company_overtakes_a_stray_better_one() -> None:
    items = scored((1, "stray", 0.5), (2, "topic", 0.45), (3, "topic", 0.9))
    out = add_session_support(items, weight=1.0, top_n=3)
    # Supports: topic mean(0.9, 0.45) = 0.675, stray 0.5 -> 2 scores 1.125 and 1 scores 1.0.
    assert ids(out) == [3, 2, 1]
    assert [round(s.score, 3) for s in out] == [1.575, 1.125, 1.0]


def test_session_support_averages_only_the_best_top_n_of_a_session() -> None:
    items = scored((1, "a", 1.0), (2, "a", 0.0), (3, "b", 0.8), (4, "b", 0.8))
    assert ids(add_session_support(items, weight=1.0, top_n=1)) == [1, 3, 4, 2]
    assert ids(add_session_support(items, weight=1.0, top_n=2)) == [3, 4, 1, 2]


def test_a_session_window_counts_only_the_passages_near_each_one() -> None:
    def at(turn_id: int, position: int, score: float) -> Scored:
        passage = make_passage(turn_id, f"turn {turn_id}", session_id="long", position=position)
        return Scored(candidate=Candidate(passage=passage, lexical_score=1.0), score=score)

    # A long session: two strong passages about one topic (positions 0-1) and a weaker
    # one far away (position 50) that the whole-session support would lift just as much.
    items = [at(1, 0, 1.0), at(2, 1, 0.9), at(3, 50, 0.5), at(4, 60, 0.45), at(5, 61, 0.45)]
    whole = add_session_support(items, weight=1.0, top_n=2)
    near = add_session_support(items, weight=1.0, top_n=2, window=5)

    assert [round(s.score, 3) for s in whole] == [1.95, 1.85, 1.45, 1.4, 1.4]
    # Position 50 stands alone (support 0.5); 60 and 61 support each other (0.45).
    assert ids(near) == [1, 2, 3, 4, 5]
    assert [round(s.score, 3) for s in near] == [1.95, 1.85, 1.0, 0.9, 0.9]
    assert add_session_support(items, 1.0, 2, window=100) == whole


def test_session_support_of_weight_zero_changes_nothing() -> None:
    items = scored((1, "a", 0.2), (2, "b", 0.9))
    assert add_session_support(items, weight=0.0, top_n=3) == items


@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 1)), min_size=1, max_size=30),
    st.floats(0, 2),
    st.integers(1, 5),
)
def test_session_support_keeps_every_passage_and_sorts_best_first(
    rows: list[tuple[str, float]], weight: float, top_n: int
) -> None:
    items = sorted(scored(*[(i, s, x) for i, (s, x) in enumerate(rows)]), key=lambda s: -s.score)
    out = add_session_support(items, weight, top_n)
    assert sorted(ids(out)) == sorted(ids(items))
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
    # Within one session the order never changes: the same bonus is added to each.
    for session in "abc":
        assert [i for i in ids(out) if rows[i][0] == session] == [
            i for i in ids(items) if rows[i][0] == session
        ]
