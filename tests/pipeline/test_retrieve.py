"""Candidate selection across retrieval channels (stage 2)."""

from __future__ import annotations

import heapq
import re

import numpy as np
from factories import make_passage
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.analyze import WeightedTerm, analyze_query
from smartsearch_mcp.pipeline.retrieve import (
    ROLE_NAMES,
    Corpus,
    add_prf,
    dense_query,
    idf_weighted,
    ranking_text,
    said_by_named,
    select_candidates,
    term_document_counts,
    top_indices,
)
from smartsearch_mcp.types import Passage


def test_top_indices_takes_the_best_positive_scores_with_ties_to_the_lower_index() -> None:
    assert top_indices([0.0, 2.0, 1.0, 2.0, -1.0], 3) == [1, 3, 2]
    assert top_indices([0.0, 0.0], 5) == []
    assert top_indices([1.0], 0) == []


def heap_top_indices(scores: list[float], n: int, minimum: float) -> list[int]:
    """The oracle: a heap over the scores above `minimum`, keyed (-score, index)."""
    above = (i for i, s in enumerate(scores) if s > minimum)
    return heapq.nsmallest(max(n, 0), above, key=lambda i: (-scores[i], i))


@given(
    st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, 2.5000001, -1.0, 7.0, float("nan"), 3]))
    | st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32)),
    st.integers(-1, 12),
    st.sampled_from([0.0, -1.0, 2.0, float("-inf")]),
    st.booleans(),
)
def test_top_indices_agree_with_a_heap_of_every_score(
    scores: list[float], n: int, minimum: float, as_array: bool
) -> None:
    values = np.asarray(scores, dtype=np.float32) if as_array else scores
    expected = heap_top_indices(list(values), n, minimum)
    assert top_indices(values, n, minimum) == expected


def test_each_channel_contributes_its_quota_before_agreement_fills_the_rest() -> None:
    lexical = [9.0, 8.0, 7.0, 0.0, 0.0, 0.0]
    dense = [0.1, 0.2, 0.3, 0.9, 0.8, 0.05]
    chosen = select_candidates(
        {"lexical": lexical, "dense": dense}, {"lexical": 1, "dense": 1}, 4, rrf_k=10
    )
    # Quotas in channel name order (dense, then lexical), then the fused order.
    assert chosen[:2] == [3, 0]
    assert len(chosen) == 4
    assert set(chosen[2:]) <= {1, 2, 4}


def test_a_strong_hit_of_one_channel_is_kept_even_when_the_others_disagree() -> None:
    # Passage 5 is last in three channels and first in bm25.
    channels = {
        "lexical": [5.0, 4.0, 3.0, 2.0, 1.0, 0.0],
        "dense": [0.9, 0.8, 0.7, 0.6, 0.5, 0.0],
        "context": [0.9, 0.8, 0.7, 0.6, 0.5, 0.0],
        "bm25": [0.0, 0.0, 0.0, 0.0, 0.0, 3.0],
    }
    quotas = {"bm25": 1, "lexical": 0, "dense": 0, "context": 0}
    assert 5 in select_candidates(channels, quotas, 2, rrf_k=60)
    assert 5 not in select_candidates(channels, {}, 2, rrf_k=60)


def test_passages_no_channel_matched_are_never_candidates() -> None:
    channels = {"lexical": [1.0, 0.0, 0.0], "bm25": [0.0, 0.0, 2.0]}
    # 0 and 2 tie on fused rank; the lower index goes first. Passage 1 matched nothing.
    assert select_candidates(channels, {}, 10, rrf_k=15) == [0, 2]


def test_nothing_is_selected_for_no_channels_or_no_room() -> None:
    assert select_candidates({}, {}, 5, rrf_k=15) == []
    assert select_candidates({"lexical": [1.0]}, {"lexical": 1}, 0, rrf_k=15) == []


@given(
    st.lists(
        st.tuples(
            st.floats(-1, 10, allow_nan=False),
            st.floats(-1, 1, allow_nan=False),
            st.floats(0, 5, allow_nan=False),
        ),
        min_size=1,
        max_size=60,
    ),
    st.integers(0, 70),
    st.integers(0, 10),
)
def test_selection_is_bounded_unique_matched_and_deterministic(
    rows: list[tuple[float, float, float]], total: int, quota: int
) -> None:
    channels = {
        "lexical": [r[0] for r in rows],
        "dense": np.array([r[1] for r in rows]),
        "bm25": [r[2] for r in rows],
    }
    quotas = {"lexical": quota, "dense": quota, "bm25": quota}
    chosen = select_candidates(channels, quotas, total, rrf_k=15)
    assert len(chosen) <= total
    assert len(set(chosen)) == len(chosen)
    assert all(any(channels[n][i] > 0 for n in channels) for i in chosen)
    assert chosen == select_candidates(dict(reversed(channels.items())), quotas, total, 15)
    matched = sum(1 for i in range(len(rows)) if any(channels[n][i] > 0 for n in channels))
    assert len(chosen) == min(total, matched)


def test_the_dense_query_drops_the_names_of_the_people_in_the_conversation() -> None:
    speakers = frozenset({"Margaret", "Tobias Reed", "Tobias"})
    assert (
        dense_query("What does Tobias cook on Sundays?", speakers) == "What does cook on Sundays?"
    )
    assert dense_query("What is Margaret's job?", speakers) == "What is job?"
    assert dense_query("when did tobias reed call margaret", speakers) == "when did call"


def test_the_dense_query_keeps_other_names_roles_and_a_query_of_names_only() -> None:
    speakers = frozenset({"Ann", "assistant", "user"})
    assert dense_query("Where does Bob work?", speakers) == "Where does Bob work?"
    assert dense_query("What did the assistant tell the user?", speakers) == (
        "What did the assistant tell the user?"
    )
    assert dense_query("Annie and Ann", speakers) == "Annie and"
    assert dense_query("Ann?", speakers) == "Ann?"
    assert dense_query("anything", frozenset()) == "anything"


@given(st.text(max_size=80), st.sets(st.text(min_size=1, max_size=12), max_size=5))
def test_any_query_and_any_speaker_names_give_a_non_empty_dense_query(
    query: str, speakers: set[str]
) -> None:
    out = dense_query(query, frozenset(speakers))
    has_word = re.compile(r"\w")
    # never emptier than the query: a query with a word keeps a word to embed
    assert bool(has_word.search(out)) == bool(has_word.search(query))
    if out != query:  # names were dropped: the rest, spaces normalised, no name left
        assert out == " ".join(out.split()) and len(out) <= len(query)
        for name in speakers:
            if name.isascii() and name.isalnum() and name.lower() not in ROLE_NAMES:
                assert not re.search(rf"\b{name}\b", out, re.IGNORECASE)


PERSON = st.from_regex(r"[A-Z][a-z]{1,7}", fullmatch=True).filter(
    lambda name: name.lower() not in ROLE_NAMES
)


@given(
    st.lists(PERSON, min_size=1, max_size=3),
    st.sampled_from(["", "?", "'s", ",", "’s!"]),
    st.from_regex(r"[a-z]{1,8}( [a-z]{1,8}){0,3}", fullmatch=True),
)
def test_a_query_of_speaker_names_keeps_its_other_words_or_stays_whole(
    names: list[str], tail: str, words: str
) -> None:
    query = " ".join(name + tail for name in names)
    assert dense_query(query, frozenset(names)) == query  # nothing else to embed: kept whole
    if not set(words.split()) & {name.lower() for name in names}:
        out = dense_query(f"{query} {words}", frozenset(names))
        assert re.findall(r"\w+", out) == words.split()  # the names gone, the rest kept


def test_passages_said_by_someone_the_question_names_are_marked() -> None:
    def turn(speaker: str | None) -> Passage:
        return make_passage(1, "hello", speaker=speaker)

    passages = [turn("Ann Lee"), turn("Bo"), turn(None), turn("ann")]
    analysis = analyze_query("What does Ann do to relax?", None)
    assert said_by_named(passages, analysis) == [1.0, 0.0, 0.0, 1.0]
    assert said_by_named(passages, analyze_query("what is for dinner", None)) == [0.0] * 4


def test_a_corpus_makes_ranking_texts_on_demand_and_matches_their_lowered_form() -> None:
    passages = [make_passage(i, f"Text {i}", speaker=s) for i, s in enumerate(["Ann", None, "Bo"])]

    corpus = Corpus.build(passages)

    assert len(corpus.texts) == 3
    assert list(corpus.texts) == ["Ann: Text 0", "Text 1", "Bo: Text 2"]
    assert corpus.texts[1:] == [ranking_text(p) for p in passages[1:]]
    assert corpus.lowered == [t.lower() for t in corpus.texts]


def test_idf_counts_the_texts_a_term_matches_as_a_word_not_as_a_substring() -> None:
    """ "art" is a word in one text and a substring of four others (party, start, smart,
    heart): it is as rare as "paints", a word of one text, and weighs the same."""
    texts = [
        "she paints and loves art",
        "a party at the start",
        "a smart move",
        "my heart says yes",
        "an article about cars",
        "nothing here",
    ]
    art = WeightedTerm("art", 1.0, "word")
    paints = WeightedTerm("paints", 1.0, "word")
    weighted = idf_weighted([art, paints], texts)
    assert weighted[0].weight == weighted[1].weight
    assert term_document_counts([art, paints], texts) == [1, 1]


def test_feedback_draws_its_terms_from_what_was_said_not_from_who_said_it() -> None:
    """The best hits for "who went hiking" are all Zebulon's: his name is in every one of them
    as a speaker label, but searching it again would only pull up everything he said."""
    said = [
        ("Zebulon", "we went hiking up the ridge trail at dawn"),
        ("Zebulon", "hiking the ridge again next weekend with my brother"),
        ("Zebulon", "my boots gave out after hiking the ridge"),
        ("Ann", "the lasagna needs another hour in the oven"),
        ("Bo", "I repainted the kitchen blue"),
        ("Ann", "the garden is full of tomatoes this year"),
        ("Bo", "our cat sleeps on the radiator"),
    ]
    passages = [make_passage(i, text, speaker=who) for i, (who, text) in enumerate(said, 1)]
    corpus = Corpus.build(passages)
    analysis = analyze_query("Who went hiking?", None)
    scores = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]

    _, terms = add_prf(analysis, scores, corpus, prf_docs=3, prf_terms=3)

    words = [t.term for t in terms]
    assert "ridge" in words
    assert "zebulon" not in words
