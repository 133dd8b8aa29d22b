"""Term matches counted over many texts at once: the same counts and scores as matching each
text alone (the oracle: `TermMatcher.score`, `re.finditer` per text)."""

from __future__ import annotations

import re
from datetime import datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline import term_counts
from smartsearch_mcp.pipeline.analyze import WeightedTerm, analyze_query
from smartsearch_mcp.pipeline.lexical import (
    REPEAT_CAP,
    compile_term,
    compile_terms,
    counts_of,
    term_pattern,
    whole_word,
)
from smartsearch_mcp.pipeline.retrieve import lexical_scores, term_document_counts
from smartsearch_mcp.pipeline.term_counts import TermCounts, WordIndex, count_matches


def patterns(terms: list[WeightedTerm]) -> list[tuple[str, re.Pattern[str]]]:
    return [(literal, re.compile(source)) for literal, source in map(term_pattern, terms)]


def counted_alone(pattern: re.Pattern[str], text: str, cap: int = REPEAT_CAP) -> int:
    return min(cap, sum(1 for _ in pattern.finditer(text.lower())))


PIECES = st.sampled_from(
    ["new", "york", "New York", "new-york", "art", "party", "paint", "painted", "3", "3.5",
     "30", "c++", "Ann", "ann's", "İstanbul", "ΣΑΣ", "σ", "\x00", "\x00\x00", " ", ".", ",",
     "\n", "😀", "-", "_", "sis", "sister", "x1", "…"]
)  # fmt: skip
TEXTS = st.lists(st.lists(PIECES, max_size=12).map("".join), max_size=12)
TERM_WORDS = st.sampled_from(
    ["new york", "art", "paint", "3", "c++", "ann", "istanbul", "σας", "\x00", "a\x00b",
     "sister", "sis", "x1", "new", "york", ".", "😀"]
)  # fmt: skip
TERMS = st.lists(
    st.tuples(
        TERM_WORDS,
        st.floats(0.1, 3.0),
        st.booleans(),
        st.sampled_from([None, "new york", "sister", "art"]),
    ).map(lambda t: WeightedTerm(t[0], round(t[1], 4), "word", inflect=t[2], group=t[3])),
    max_size=7,
)


@given(TERMS, TEXTS)
def test_counts_over_joined_texts_are_the_counts_of_each_text_alone(
    terms: list[WeightedTerm], texts: list[str]
) -> None:
    found = count_matches(patterns(terms), texts, REPEAT_CAP)
    for (_, pattern), row in zip(patterns(terms), found, strict=True):
        assert row.tolist() == [counted_alone(pattern, text) for text in texts]


@given(TERMS, TEXTS)
def test_scores_of_all_texts_at_once_equal_each_texts_score_exactly(
    terms: list[WeightedTerm], texts: list[str]
) -> None:
    matcher = compile_terms(terms)
    assert matcher.score_all(texts) == [matcher.score(text) for text in texts]


def test_texts_are_scanned_in_chunks_that_add_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(term_counts, "CHUNK_TEXTS", 3)
    texts = [f"text {i} paint" + " paint" * (i % 4) for i in range(10)] + ["İ paints"]
    terms = [WeightedTerm("paint", 1.0, "word", inflect=True)]
    (row,) = count_matches(patterns(terms), texts, REPEAT_CAP)
    assert row.tolist() == [1 + i % 4 for i in range(10)] + [1]
    assert lexical_scores(terms, texts) == [compile_terms(terms).score(t) for t in texts]


def test_no_match_crosses_from_one_text_to_the_next() -> None:
    terms = [WeightedTerm("new york", 1.0, "entity"), WeightedTerm("3", 1.0, "number")]
    (phrase, number) = count_matches(patterns(terms), ["in new", "york", "3", ".5", "3."], 20)
    assert phrase.tolist() == [0, 0, 0, 0, 0]
    assert number.tolist() == [0, 0, 1, 0, 1]


def test_counts_stop_at_the_cap() -> None:
    terms = [WeightedTerm("paint", 1.0, "word")]
    (row,) = count_matches(patterns(terms), ["paint " * 30, "paint " * 3], 20)
    assert row.tolist() == [20, 3]
    with pytest.raises(ValueError, match="cap"):
        count_matches(patterns(terms), ["paint"], 256)


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The patterns `count_matches` scans for, in order."""
    found: list[str] = []
    real = term_counts.count_matches

    def counting(patterns: list[tuple[str, re.Pattern[str]]], *args: object) -> object:
        found.extend(p.pattern for _, p in patterns)
        return real(patterns, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(term_counts, "count_matches", counting)
    return found


def test_idf_and_scores_share_one_count_of_each_term(scanned: list[str]) -> None:
    texts = ["ann painted the lake", "the lake", "ann"]
    terms = [WeightedTerm("ann", 2.0, "proper"), WeightedTerm("lake", 1.0, "noun", inflect=True)]
    counts = counts_of(texts)
    assert term_document_counts(terms, counts) == [2, 2]
    assert lexical_scores(terms, counts) == [compile_terms(terms).score(t) for t in texts]
    assert len(scanned) == 2
    assert isinstance(counts, TermCounts) and len(counts) == 3


@given(st.text(max_size=80), TEXTS)
def test_any_question_scores_the_same_over_all_texts_at_once(query: str, texts: list[str]) -> None:
    matcher = compile_terms(analyze_query(query, None, datetime(2023, 6, 14)))
    assert matcher.score_all(texts) == [matcher.score(text) for text in texts]


@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF)))
def test_lowercasing_a_lowercased_text_changes_nothing(text: str) -> None:
    assert text.lower().lower() == text.lower()  # what matching lowered texts as-is relies on


@given(TERMS, TEXTS)
def test_lowered_texts_are_counted_as_they_are_with_the_same_counts(
    terms: list[WeightedTerm], texts: list[str]
) -> None:
    lowered = [text.lower() for text in texts]
    as_they_are = count_matches(patterns(terms), lowered, REPEAT_CAP, lowered=True)
    found = count_matches(patterns(terms), texts, REPEAT_CAP)
    assert [row.tolist() for row in as_they_are] == [row.tolist() for row in found]
    matcher = compile_terms(terms)
    assert matcher.score_all(counts_of(lowered, lowered=True)) == list(map(matcher.score, texts))


@given(TERMS, TEXTS)
def test_whole_word_terms_counted_from_a_word_index_have_the_scans_counts(
    terms: list[WeightedTerm], texts: list[str]
) -> None:
    found = [compile_term(term) for term in terms]
    lowered = [text.lower() for text in texts]
    indexed = TermCounts(lowered, REPEAT_CAP, lowered=True, words=WordIndex(lowered))
    scanned = count_matches(patterns(terms), texts, REPEAT_CAP)
    assert [row.tolist() for row in indexed.rows(found)] == [row.tolist() for row in scanned]
    matcher = compile_terms(terms)
    assert matcher.score_all(indexed) == list(map(matcher.score, texts))


def test_a_word_index_counts_words_phrases_and_numbers_and_leaves_symbols_to_the_scan(
    scanned: list[str],
) -> None:
    lowered = ["she studies and studied", "a study, studying", "student", "3.5 new york 3"]
    terms = [
        WeightedTerm("study", 1.0, "noun", inflect=True),
        WeightedTerm("new york", 1.0, "entity"),
        WeightedTerm("3", 1.0, "number"),
        WeightedTerm("c++", 1.0, "word"),
    ]
    rows = TermCounts(lowered, REPEAT_CAP, True, WordIndex(lowered)).rows(
        [compile_term(t) for t in terms]
    )
    assert [row.tolist() for row in rows] == [[2, 2, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1], [0] * 4]
    assert scanned == [compile_term(terms[-1]).pattern.pattern]  # "c++" only
    assert [whole_word(t) is None for t in terms] == [False, True, True, True]


def test_a_word_index_must_be_of_the_texts_counted() -> None:
    with pytest.raises(ValueError, match="word index of 1 texts for 2"):
        TermCounts(["a", "b"], REPEAT_CAP, True, WordIndex(["a"]))


def test_a_word_index_caps_its_counts() -> None:
    lowered = ["paint " * 300, "", "paints"]
    (row,) = TermCounts(lowered, 20, True, WordIndex(lowered)).rows(
        [compile_term(WeightedTerm("paint", 1.0, "word", inflect=True))]
    )
    assert row.tolist() == [20, 0, 1]


def test_a_word_index_runs_a_phrase_only_on_the_texts_holding_its_words_in_a_row() -> None:
    lowered = ["new york", "york new", "new-york!", "new, old york", "new", "york", "a\x00b"]
    index = WordIndex(lowered)
    assert index.holding(["new", "york"]).tolist() == [0, 2, 4]  # 4: runs into the next text
    assert index.holding(["new", "jersey"]).tolist() == []
    found = [compile_term(WeightedTerm(t, 1.0, "entity")) for t in ("new york", "a\x00b")]
    rows = TermCounts(lowered, REPEAT_CAP, True, index).rows(found)
    assert [row.tolist() for row in rows] == [[1, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 1]]


@given(TERMS, TEXTS, TEXTS)
def test_a_word_index_extended_with_more_texts_counts_as_one_built_over_all(
    terms: list[WeightedTerm], first: list[str], more: list[str]
) -> None:
    lowered = [text.lower() for text in first + more]
    extended = WordIndex(lowered[: len(first)]).extended(lowered[len(first) :])
    whole = WordIndex(lowered)
    assert extended.starts.tolist() == whole.starts.tolist()
    assert extended.sorted_words == whole.sorted_words
    found = [compile_term(term) for term in terms]
    rows = TermCounts(lowered, REPEAT_CAP, True, extended).rows(found)
    assert [r.tolist() for r in rows] == [
        r.tolist() for r in TermCounts(lowered, REPEAT_CAP, True, whole).rows(found)
    ]


def test_a_large_index_extended_by_a_few_words_keeps_its_vocabulary_sorted() -> None:
    # many words before, two new ones after: the new words are put in place, not sorted anew
    lowered = [f"w{i:04d} common" for i in range(0, 2000, 2)]
    more = ["common w0001 zzz", "aaa w0003"]
    extended = WordIndex(lowered).extended(more)
    whole = WordIndex(lowered + more)
    assert extended.sorted_words == whole.sorted_words == sorted(whole.vocabulary)
    assert extended.ids.tolist() == whole.ids.tolist()


def test_extensions_write_after_the_ids_in_place_and_never_under_an_index_in_use() -> None:
    texts = ["alpha beta", "gamma", "beta beta delta", "epsilon alpha"]
    first = WordIndex(texts[:1])
    chained = first.extended(texts[1:2]).extended(texts[2:3])
    whole = WordIndex(texts[:3])
    assert chained.ids.tolist() == whole.ids.tolist()
    # a second extension of an index already extended writes elsewhere: both stay right
    one = chained.extended(texts[3:])
    other = chained.extended(["zeta zeta"])
    assert one.ids.tolist() == WordIndex(texts).ids.tolist()
    assert other.ids.tolist() == WordIndex([*texts[:3], "zeta zeta"]).ids.tolist()
    assert chained.ids.tolist() == whole.ids.tolist()  # what it held is unchanged
    # and the chain shares one array when there is room (no copy of the ids per write)
    assert np.shares_memory(one.ids, chained.ids) != np.shares_memory(other.ids, chained.ids)
