"""Relations named in the memory: "my brother Anselm" makes "Where does my brother live?"
search Anselm too."""

from __future__ import annotations

import pytest
from factories import make_passage

from smartsearch_mcp.pipeline.analyze import analyze_query
from smartsearch_mcp.pipeline.lexical import compile_terms
from smartsearch_mcp.pipeline.relations import (
    MAX_NAMES,
    relation_names,
    relations_in,
    relations_of,
    resolve_relations,
    with_relation_names,
)
from smartsearch_mcp.pipeline.term_counts import WordIndex
from smartsearch_mcp.types import Passage


def _passages(texts: list[str]) -> tuple[list[Passage], list[str]]:
    passages = [make_passage(i + 1, text, speaker="Wren") for i, text in enumerate(texts)]
    return passages, [t.lower() for t in texts]


def _names(question: str, texts: list[str]) -> list[tuple[str, str, tuple[int, ...]]]:
    passages, lowered = _passages(texts)
    relations = relations_in(analyze_query(question, None))
    found = relation_names(relations, passages, lowered)
    # read through the passages' word index, only those holding the words: the same
    assert relation_names(relations, passages, lowered, WordIndex(lowered)) == found
    return [(f.relation, f.name, f.said_in) for f in found]


@pytest.mark.parametrize(
    ("text", "relation", "name"),
    [
        ("Planning a trip with my brother Anselm in March.", "brother", "Anselm"),
        ("My older sister, Ilka, lives abroad.", "sister", "Ilka"),
        ("I met Ilka, my sister, at the station.", "sister", "Ilka"),
        ("Planning it with my sister Ilka I think.", "sister", "Ilka"),
        ("First week was good, my manager is called Odile.", "manager", "Odile"),
        ("My cat's name is Pilchard.", "cat", "Pilchard"),
        ("our vet Dr Varga says he is fine", "vet", "Dr Varga"),
        ("lunch with my sis Ilka's kids", "sister", "Ilka"),  # a chat spelling, a possessive
        ("my boss Lars Eklund wants the report", "boss", "Lars Eklund"),
    ],
)
def test_a_relation_is_named_in_the_ways_people_say_it(text, relation, name) -> None:
    assert _names(f"What about my {relation}?", ["Nothing here.", text]) == [(relation, name, (1,))]


@pytest.mark.parametrize(
    "text",
    [
        "I told my sister I would come.",  # a pronoun, not a name
        "I called my sister Monday.",  # a day
        "My sister and I went hiking.",
        "my sister ilka",  # no capital: not read as a name
        "Sister Ilka runs the choir.",  # no "my"
        "My boyfriend, Ruben and I went sailing.",  # a list, not a name set off by commas
        "Last Tuesday, my boyfriend, Ruben, and I played chess.",
        "Luckily, my son's fine.",  # a capitalized word opening the sentence
        "Last Sunday, my partner baked.",
    ],
)
def test_words_that_are_not_names_are_not_taken_for_one(text) -> None:
    relation = next(r for r in ("sister", "boyfriend", "son", "partner") if r in text.lower())
    assert _names(f"Where does my {relation} live?", [text]) == []


def test_a_relation_named_many_ways_is_ambiguous_and_gets_no_name() -> None:
    many = [f"Coffee with my cousin {n}." for n in ("Ana", "Ben", "Cleo", "Dev")][: MAX_NAMES + 1]
    assert _names("What does my cousin do?", many) == []
    two = [*many[:MAX_NAMES], "Again with my cousin Ana."]
    assert [name for _, name, _ in _names("What does my cousin do?", two)] == ["Ana", "Ben"]


def test_only_relations_the_question_uses_are_looked_up() -> None:
    texts = ["Trip with my brother Anselm.", "My manager is Odile."]
    assert _names("Who is my manager?", texts) == [("manager", "Odile", (1,))]
    assert _names("What did we decide about the budget?", texts) == []
    assert relations_in(analyze_query("Where do my sisters live?", None)) == ["sister"]


def test_the_name_is_searched_at_the_weight_of_the_relation_word() -> None:
    analysis = analyze_query("Where does my brother live?", None)
    passages, lowered = _passages(["Trip with my brother Anselm.", "Anselm moved to Graz."])
    names = relation_names(relations_in(analysis), passages, lowered)
    searched = with_relation_names(analysis, names)
    weights = {t.term: t for t in searched.terms}
    assert weights["anselm"].weight == weights["brother"].weight
    assert weights["anselm"].kind == "proper"
    assert compile_terms(searched).score("anselm moved to graz.") > 0
    assert compile_terms(analysis).score("anselm moved to graz.") == 0
    assert with_relation_names(analysis, []) is analysis


def test_a_full_name_is_also_searched_by_its_first_name() -> None:
    analysis = analyze_query("What did my boss want?", None)
    passages, lowered = _passages(["My boss Lars Eklund wants the report."])
    searched = with_relation_names(
        analysis, relation_names(relations_in(analysis), passages, lowered)
    )
    matcher = compile_terms(searched)
    assert matcher.score("lars moved the deadline") > 0
    # the full name and the first name are one group: a turn saying both counts once
    assert matcher.score("lars eklund moved the deadline") == matcher.score("lars moved it")


def test_a_name_is_also_searched_by_the_relation_the_memory_gives_it() -> None:
    passages, lowered = _passages(
        ["Trip with my brother Anselm.", "My brother moved to Graz.", "I met Odile, my manager."]
    )
    found = relations_of(["anselm", "odile", "bob"], passages, lowered)
    assert relations_of(["anselm", "odile", "bob"], passages, lowered, WordIndex(lowered)) == found
    assert [(f.relation, f.name, f.said_in) for f in found] == [
        ("brother", "anselm", (0,)),
        ("manager", "odile", (2,)),
    ]
    analysis = analyze_query("Where does Anselm live?", None)
    searched, forward, backward = resolve_relations(analysis, passages, lowered, (), {})
    assert forward == [] and [f.relation for f in backward] == ["brother"]
    terms = {t.term: t for t in searched.terms}
    assert terms["brother"].kind == "noun" and terms["bro"].group == "brother"
    assert compile_terms(searched).score("my brother moved to graz.") > 0
    assert compile_terms(analysis).score("my brother moved to graz.") == 0


def test_speakers_names_are_not_looked_up_as_relations() -> None:
    passages, lowered = _passages(["Trip with my brother Anselm."])
    analysis = analyze_query("What did Anselm say about the trip?", None)
    searched, _, backward = resolve_relations(analysis, passages, lowered, ["Anselm"], {})
    assert backward == [] and searched == analysis


def test_what_was_looked_up_is_kept_in_the_cache_both_ways() -> None:
    passages, lowered = _passages(["Trip with my brother Anselm.", "Anselm moved to Graz."])
    cache: dict[str, list] = {}
    first = resolve_relations(
        analyze_query("Where does my brother live?", None), passages, lowered, (), cache
    )
    assert sorted(cache) == ["rel:brother"]
    again = resolve_relations(analyze_query("Where does my brother live?", None), [], [], (), cache)
    assert again == first  # from the cache: no passages were read
    resolve_relations(analyze_query("Is Anselm older?", None), passages, lowered, (), cache)
    assert cache["name:anselm"][0].relation == "brother"
