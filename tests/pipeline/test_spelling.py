"""Misspellings read from the memory: one edit apart, never two real words."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.analyze import analyze_query
from smartsearch_mcp.pipeline.spelling import (
    MAX_SPELLINGS,
    KnownWords,
    corrected_question,
    memory_words,
    misspellings,
    one_edit,
    with_misspellings,
)
from smartsearch_mcp.tokens import EstimatedTokenCounter, get_token_counter


@pytest.fixture(scope="module")
def known() -> KnownWords:
    return KnownWords(get_token_counter("o200k_base"))


def _words(*texts: str) -> frozenset[str]:
    return memory_words(text.lower() for text in texts)


def test_one_edit_holds_each_kind_of_typing_error():
    edits = one_edit("pizza")
    assert {"piza", "pizzza", "pzza", "ipzza", "pizzs", "pizzaa"} <= edits
    assert "pizza" not in edits
    assert "pziaz" not in edits  # two edits


@given(st.text(alphabet="abcdefghij", min_size=1, max_size=8))
def test_every_edit_is_one_letter_away(word):
    for edited in one_edit(word):
        assert edited != word
        assert abs(len(edited) - len(word)) <= 1


def test_the_vocabulary_tells_words_from_misspellings(known):
    assert known("restaurant") and known("house") and known("horse")
    assert not known("resturant") and not known("yesgerday")


def test_a_word_the_memory_misspells_is_found(known):
    words = _words("we finally tried that new resturant downtown")
    assert misspellings("restaurant", words, known) == ["resturant"]


def test_a_word_the_question_misspells_is_found_as_the_memory_spells_it(known):
    words = _words("we finally tried that new restaurant downtown")
    assert misspellings("resturant", words, known) == ["restaurant"]


def test_two_real_words_one_edit_apart_are_never_taken_for_each_other(known):
    words = _words("my horse is called Duke", "see you later", "a glass of water")
    assert misspellings("house", words, known) == []
    assert misspellings("water", words, known) == []
    # an inflection the vocabulary splits ("hiked") is still a real word: "hike" is whole
    assert known("hiked") and misspellings("liked", _words("we hiked all day"), known) == []


def test_short_words_are_left_alone(known):
    assert misspellings("cat", _words("the cta sat on the mat"), known) == []
    assert misspellings("dogs", _words("two dgos in the park"), known) == []


def test_at_most_a_few_spellings_the_misspellings_first(known):
    words = _words("resturant restuarant restaurnt restaurat restauran restaurants")
    found = misspellings("restaurant", words, known)
    assert len(found) == MAX_SPELLINGS
    assert all(not known(word) for word in found)
    assert found == sorted(found)


def test_the_question_searches_the_memorys_spelling_as_a_variant(known):
    analysis = analyze_query("Which restaurant did we try?", None)
    searched = with_misspellings(analysis, _words("that new resturant downtown"), known)
    variant = next(t for t in searched.terms if t.term == "resturant")
    original = next(t for t in searched.terms if t.term == "restaurant")
    assert variant.kind == "variant" and variant.group == "restaurant"
    assert variant.weight < original.weight
    weights = [t.weight for t in searched.terms]
    assert weights == sorted(weights, reverse=True)


def test_nothing_is_added_without_a_misspelling(known):
    analysis = analyze_query("Which restaurant did we try?", None)
    assert with_misspellings(analysis, _words("the restaurant downtown"), known) is analysis


def test_no_vocabulary_no_misspellings():
    estimate = KnownWords(EstimatedTokenCounter())
    assert not estimate.available
    analysis = analyze_query("Which restaurant did we try?", None)
    assert with_misspellings(analysis, _words("that new resturant"), estimate) is analysis


def test_a_speakers_name_is_not_looked_up_but_a_misspelled_one_finds_it(known):
    words = _words("omg Margaert that is amazing", "Margaret: I went to the book club")
    asked = analyze_query("What did Margaret bring?", None)
    searched = with_misspellings(asked, words, known, speakers={"margaret"})
    assert "margaert" not in {t.term for t in searched.terms}
    misspelled = analyze_query("What did Margret bring?", None)
    searched = with_misspellings(misspelled, words, known, speakers={"margaret"})
    assert "margaret" in {t.term for t in searched.terms}


def test_the_question_is_written_as_the_memory_spells_it_for_the_bi_encoder(known):
    words = _words("Margaret went to the restaurant", "the house and the horse", "attention")
    assert (
        corrected_question("When did Margret go to the RESTURANT?", words, known)
        == "When did Margaret go to the RESTAURANT?"
    )
    assert corrected_question("where is my hourse?", words, known) == "where is my hourse?"
    # real words and words the memory has are never changed
    assert corrected_question("Is the horse ok?", words, known) == "Is the horse ok?"
    assert corrected_question("pay atention", words, known) == "pay attention"
    estimate = KnownWords(EstimatedTokenCounter())
    assert corrected_question("the resturant", words, estimate) == "the resturant"
