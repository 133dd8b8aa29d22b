"""Index-free lexical matching: NER-weighted grep over raw turns, pseudo-relevance feedback
and entity discovery for multi-hop expansion. Pure functions over strings.

`TermMatcher.score` is the core of candidate retrieval: a text scores the summed weights of
the distinct query terms it contains. Matching is case-insensitive and word-boundary aware;
entities match as whole phrases, other words also in their English inflections.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from smartsearch_mcp.pipeline.analyze import (
    MAX_TERM_CHARS,
    NAMED_LABELS,
    QueryAnalysis,
    WeightedTerm,
    clean_entity_text,
    extract_entities_rules,
)
from smartsearch_mcp.pipeline.passages import sentence_spans
from smartsearch_mcp.pipeline.term_counts import (
    WORD,
    TermCounts,
    TermPattern,
    WordIndex,
    count_capped,
)
from smartsearch_mcp.pipeline.word_stats import CorpusStats
from smartsearch_mcp.pipeline.words import (
    CALENDAR_WORDS,
    is_stopword,
    light_stem,
    sanitize_text,
    tokenize_words,
)

# A term found n times scores weight * (1 + REPEAT_BONUS * ln(n)), n capped at REPEAT_CAP.
# Longer hits are read by NER only in their sentences naming a query entity (see
# `anchor_sentences`); LoCoMo-like chat turns are shorter and read whole.
NER_WHOLE_WORDS = 80
REPEAT_BONUS = 0.1
REPEAT_CAP = 20
PRF_WEIGHT = 0.5

_VOWELS = frozenset("aeiou")
# Inflectional endings added back to a word or stem ("paint" -> "painted", "paintings").
_SUFFIXES = "e|es|ed|er|ers|est|ing|ings|s"
_DOUBLED_SUFFIXES = "ed|er|ers|est|ing|ings"
_PHRASE_GAP = r"\W{1,3}"  # between the words of a phrase: "New York", "Dr. Ruiz", "New-York"


# (weight, group, term); the term's literal occurs in every lowercased text its pattern
# matches, so `literal in text` is a cheap precheck.
_Compiled = tuple[float, int, TermPattern]
_REPEAT_FACTORS = tuple(
    1.0 + REPEAT_BONUS * math.log(n) if n else 0.0 for n in range(REPEAT_CAP + 1)
)


class TermMatcher:
    """Weighted terms compiled for fast scoring of many texts (see `compile_terms`)."""

    __slots__ = ("_compiled", "_grouped", "_prefilter", "terms")

    def __init__(self, terms: Sequence[WeightedTerm]) -> None:
        # Over-long terms (e.g. a PRF word from a turn of one 10,000-character word) are left
        # out: see MAX_TERM_CHARS.
        self.terms: tuple[WeightedTerm, ...] = tuple(
            t for t in terms if t.term and t.weight > 0 and len(t.term) <= MAX_TERM_CHARS
        )
        groups: dict[str, int] = {}
        compiled: list[_Compiled] = []
        for term in self.terms:
            group = groups.setdefault(term.group_key, len(groups))
            compiled.append((term.weight, group, compile_term(term)))
        self._compiled: tuple[_Compiled, ...] = tuple(compiled)
        self._grouped = len(groups) < len(compiled)
        literals = sorted({c[2].literal for c in compiled}, key=len, reverse=True)
        self._prefilter: re.Pattern[str] | None = (
            re.compile("|".join(re.escape(lit) for lit in literals)) if literals else None
        )

    def __repr__(self) -> str:
        return f"TermMatcher({[t.term for t in self.terms]!r})"

    def score(self, text: str) -> float:
        """Sum over the distinct terms found in `text` of their weight.

        Terms of one group (a word and its lemma) count once, at the best weight found. A
        term found n times gets a small sublinear bonus (1 + 0.1 ln n, n capped at 20). A
        multiword entity found whole scores its phrase weight on top of its words' weights:
        that is the full-match bonus. 0.0 when nothing matches.
        """
        if self._prefilter is None:
            return 0.0
        low = text.lower()
        if self._prefilter.search(low) is None:
            return 0.0
        if not self._grouped:
            total = 0.0
            for weight, _, (literal, pattern, *_) in self._compiled:
                if literal in low:
                    total += (
                        weight * _REPEAT_FACTORS[count_capped(literal, pattern, low, REPEAT_CAP)]
                    )
            return total
        best: dict[int, float] = {}
        for weight, group, (literal, pattern, *_) in self._compiled:
            if literal in low:
                value = weight * _REPEAT_FACTORS[count_capped(literal, pattern, low, REPEAT_CAP)]
                if value > best.get(group, 0.0):
                    best[group] = value
        return sum(best.values())

    def patterns(self) -> list[TermPattern]:
        """How each term is found, in matcher order."""
        return [term for _, _, term in self._compiled]

    def score_all(self, texts: Sequence[str] | TermCounts) -> list[float]:
        """`score` of each text, from each term's matches counted over all the texts at once
        (`TermCounts`; pass one to share its counts): the same sums, added in the same order.
        """
        counts = texts if isinstance(texts, TermCounts) else counts_of(texts)
        if not self._compiled:
            return [0.0] * len(counts)
        factors = np.asarray(_REPEAT_FACTORS)
        values = [
            weight * factors[row]
            for (weight, *_), row in zip(self._compiled, counts.rows(self.patterns()), strict=True)
        ]
        total = np.zeros(len(counts))
        if not self._grouped:
            for value in values:  # in term order, as `score` adds them
                total += value
            return total.tolist()
        # Each group's best value, added in the order `score` adds them in: of the first
        # term of each group found in the text (a later term of the group only raises it).
        groups = 1 + max(group for _, group, _ in self._compiled)
        best = np.zeros((groups, len(counts)))
        first = np.full((groups, len(counts)), len(values))
        for index, ((_, group, _), value) in enumerate(zip(self._compiled, values, strict=True)):
            np.maximum(best[group], value, out=best[group])
            first[group][(value > 0) & (first[group] == len(values))] = index
        in_order = np.take_along_axis(best, np.argsort(first, axis=0, kind="stable"), axis=0)
        for value in in_order:
            total += value
        return total.tolist()

    def matched(self, text: str) -> list[WeightedTerm]:
        """The terms found in `text`, in matcher order (for explanations and diagnostics)."""
        low = text.lower()
        return [
            term
            for term, (_, _, found) in zip(self.terms, self._compiled, strict=True)
            if found.literal in low and found.pattern.search(low) is not None
        ]


def counts_of(
    texts: Sequence[str], lowered: bool = False, words: WordIndex | None = None
) -> TermCounts:
    """Term matches over `texts`, counted as `TermMatcher.score` counts them (`lowered`: the
    texts are lowercase already, as a corpus's `lowered` texts are; `words`: their
    `WordIndex`, when there is one)."""
    return TermCounts(texts, REPEAT_CAP, lowered, words)


def compile_terms(terms: QueryAnalysis | Iterable[WeightedTerm]) -> TermMatcher:
    """Compile an analysis's terms (or any weighted terms) into a `TermMatcher`."""
    return TermMatcher(tuple(terms.terms if isinstance(terms, QueryAnalysis) else terms))


def compile_term(term: WeightedTerm) -> TermPattern:
    """`term_pattern` compiled, with `whole_word` or else `words_in_a_row`."""
    literal, source = term_pattern(term)
    word = whole_word(term)
    if word is not None:
        return TermPattern(literal, re.compile(source), re.compile(word))
    return TermPattern(literal, re.compile(source), None, words_in_a_row(term))


def words_in_a_row(term: WeightedTerm) -> tuple[str, ...] | None:
    """For a phrase or a number, the whole words every match of `term_pattern` consists of,
    one after the other (between them only non-word characters); None for other terms.
    A phrase's words are separated by non-word characters and bounded by none; a number
    is bounded by none either."""
    text = term.term.lower()
    words = WORD.findall(text)
    if len(words) > 1 or (text.isdigit() and WORD.fullmatch(text) is not None):
        return tuple(words)
    return None


def whole_word(term: WeightedTerm) -> str | None:
    """For a term whose every match is one whole word of the lowercased text (a `WORD` run:
    a word and its inflections), a regex that fullmatches exactly those words; None for
    phrases, numbers (their boundaries differ) and terms holding other characters.

    `term_pattern`'s match of such a term starts after no word character with the word's
    literal and ends before none, consuming word characters only: it is one whole word."""
    text = term.term.lower()
    if text.isdigit() or WORD.fullmatch(text) is None:
        return None
    if term.inflect and text.isalpha() and len(text) >= 3:
        literal, endings = _inflected(text)
        return re.escape(literal) + endings
    return re.escape(text)


def term_pattern(term: WeightedTerm) -> tuple[str, str]:
    """(literal, regex) for one term, both lowercase: the regex runs on lowercased text and
    starts with the literal, a substring every match contains.

    Words match whole (no letter, digit or underscore either side); phrases allow one to
    three non-word characters between words ("New York", "New-York", "Dr. Ruiz"); numbers do
    not match inside longer numbers ("3" is not found in "3.5"); inflected words also match
    their English inflections ("paint" -> "painted", "paintings").
    """
    text = term.term.lower()
    words = re.findall(r"\w+", text)
    if len(words) > 1:
        rest = "".join(_PHRASE_GAP + re.escape(w) for w in words[1:])
        return words[0], _word_start(words[0]) + rest + r"(?!\w)"
    if text.isdigit():
        return text, _word_start(text, r"[\w.,]") + r"(?![.,]?\d)(?!\w)"
    if term.inflect and text.isalpha() and len(text) >= 3:
        literal, endings = _inflected(text)
        return literal, _word_start(literal) + endings + r"(?!\w)"
    return text, _word_start(text) + r"(?!\w)"


def _word_start(literal: str, before: str = r"\w") -> str:
    """`literal` not preceded by a `before` character. The look-behind follows the literal
    so that the regex engine can jump to occurrences of the literal (a leading look-behind
    makes searches about seven times slower)."""
    escaped = re.escape(literal)
    if not literal or not (literal[0].isalnum() or literal[0] == "_"):
        return escaped  # no word boundary to check before a symbol
    return f"{escaped}(?<!{before}{escaped})"


def _inflected(word: str) -> tuple[str, str]:
    """(literal, regex endings) matching `word` and its regular inflections."""
    if word.endswith("y") and len(word) > 3 and word[-2] not in _VOWELS:
        return word[:-1], "(?:y|ies|ied|ier|iest|ying)"  # study -> studies, studied
    if word.endswith("e") and len(word) > 3:
        return word[:-1], "(?:" + _SUFFIXES + ")"  # bake -> bakes, baked, baker, baking
    last = word[-1]
    if last not in _VOWELS and last not in "wxy" and word[-2] in _VOWELS:
        # run -> running, stop -> stopped: the final consonant may double
        doubled = re.escape(last) + "(?:" + _DOUBLED_SUFFIXES + ")"
        return word, "(?:" + _SUFFIXES + "|" + doubled + ")?"
    return word, "(?:" + _SUFFIXES + ")?"


# --- Pseudo-relevance feedback --------------------------------------------------------------


def select_prf_terms(
    analysis: QueryAnalysis,
    top_texts: Sequence[str],
    corpus: CorpusStats,
    n_terms: int,
    weight: float = PRF_WEIGHT,
) -> list[WeightedTerm]:
    """Expansion terms from pseudo-relevance feedback: words frequent in the top hits and rare
    in the corpus.

    A word scores (share of top texts containing it) x idf, idf = ln(1 + (N - df + 0.5) /
    (df + 0.5)). Stopwords, numbers, words under three letters and the query's own words
    (and their stems) are skipped; with three or more top texts a word must occur in at
    least two of them. The best word weighs `weight`, the others down to half of it.
    """
    if n_terms <= 0 or not top_texts:
        return []
    excluded = _query_words(analysis)
    in_top: Counter[str] = Counter()
    for text in top_texts:
        in_top.update({w for w in tokenize_words(text) if _prf_eligible(w, excluded)})
    min_docs = 2 if len(top_texts) >= 3 else 1
    scored: list[tuple[float, str]] = []
    for word, hits in in_top.items():
        if hits < min_docs:
            continue
        df = max(corpus.doc_freq.get(word, 0), hits)
        total = max(corpus.total_docs, df)
        idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
        scored.append((hits / len(top_texts) * idf, word))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen = scored[:n_terms]
    if not chosen or chosen[0][0] <= 0:
        return []
    top_score = chosen[0][0]
    return [
        WeightedTerm(word, round(weight * (0.5 + 0.5 * score / top_score), 4), "prf")
        for score, word in chosen
        if score > 0
    ]


def _query_words(analysis: QueryAnalysis) -> set[str]:
    words: set[str] = set()
    for term in analysis.terms:
        for word in term.term.split():
            words.update((word, light_stem(word)))
    for entity in analysis.entities:
        for word in tokenize_words(entity.text):
            words.update((word, light_stem(word)))
    for word in tokenize_words(analysis.query):
        words.update((word, light_stem(word)))
    return words


def _prf_eligible(word: str, excluded: set[str]) -> bool:
    return (
        len(word) >= 3
        and not is_stopword(word)
        and any(c.isalpha() for c in word)
        and word not in excluded
        and light_stem(word) not in excluded
    )


# --- Entity discovery (multi-hop) -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EntityMention:
    """An entity found in first hits: its surface form, label and the hits naming it."""

    text: str
    label: str
    hits: tuple[int, ...]  # indices into the hit texts, ascending


def find_entity_mentions(
    analysis: QueryAnalysis,
    hit_texts: Sequence[str],
    nlp: Any | None,
    max_entities: int,
    cache: dict[str, list[tuple[str, str]]] | None = None,
) -> list[EntityMention]:
    """Entities in `hit_texts` that are not in the query, for a second search.

    Only hits mentioning one of the query's entities count: a new entity must co-occur with
    the query's, so a query naming no entity discovers nothing (and costs no NER). Entities
    come from spaCy NER (named labels only) when `nlp` is given, else from capitalized
    sequences and acronyms. Ranked by the number of hits naming them, then by first
    appearance. `cache` (text → entities) lets repeated queries over the same texts skip NER.
    """
    if max_entities <= 0 or not hit_texts:
        return []
    query_entities = [tuple(tokenize_words(e.text)) for e in analysis.entities]
    query_entities = [words for words in query_entities if words]
    if not query_entities:
        return []
    query_text = " " + " ".join(tokenize_words(analysis.query)) + " "
    anchors = compile_terms(
        WeightedTerm(" ".join(words), 1.0, "entity") for words in query_entities
    )
    indices = [i for i, text in enumerate(hit_texts) if anchors.score(text) > 0]
    texts = [sanitize_text(anchor_sentences(hit_texts[i], anchors)) for i in indices]
    found: dict[str, tuple[str, str, list[int]]] = {}
    for index, entities in zip(indices, _cached_entities(texts, nlp, cache), strict=True):
        for surface, label in entities:
            words = tuple(tokenize_words(surface))
            key = " ".join(words)
            if not _discoverable(words, query_entities) or f" {key} " in query_text:
                continue
            if key not in found:
                found[key] = (surface, label, [])
            hits = found[key][2]
            if not hits or hits[-1] != index:
                hits.append(index)
    ranked = sorted(found.values(), key=lambda item: (-len(item[2]), item[2][0]))
    return [EntityMention(s, label, tuple(hits)) for s, label, hits in ranked[:max_entities]]


def anchor_sentences(text: str, anchors: TermMatcher) -> str:
    """The sentences of a long `text` (over NER_WHOLE_WORDS words) that match `anchors`,
    joined by a space; a shorter text whole. New entities are looked for where the query's
    entities are mentioned: in a long assistant answer, NER over the whole of it costs most
    of a recall and finds entities that merely share the text."""
    if len(text) < 2 * NER_WHOLE_WORDS or len(text.split()) <= NER_WHOLE_WORDS:
        return text
    found = [text[a:b] for a, b in sentence_spans(text) if anchors.score(text[a:b]) > 0]
    return " ".join(part.strip() for part in found) if found else text


def _cached_entities(
    texts: Sequence[str], nlp: Any | None, cache: dict[str, list[tuple[str, str]]] | None
) -> list[list[tuple[str, str]]]:
    if cache is None:
        return list(_entities_of(texts, nlp))
    # Concurrent recalls share the cache from worker threads (one may clear it meanwhile):
    # what this call returns comes from its own `known`, never from a second cache lookup.
    known = {t: found for t in texts if (found := cache.get(t)) is not None}
    missing = list(dict.fromkeys(t for t in texts if t not in known))
    fresh = dict(zip(missing, _entities_of(missing, nlp), strict=True))
    cache.update(fresh)
    known.update(fresh)
    return [known[t] for t in texts]


def _entities_of(texts: Sequence[str], nlp: Any | None) -> Iterable[list[tuple[str, str]]]:
    if nlp is None:
        for text in texts:
            yield [(e.text, e.label) for e in extract_entities_rules(text) if e.label != "QUOTED"]
        return
    # Only the entity recognizer is needed here: the tagger, parser and lemmatizer would
    # more than double the time (en_core_web_sm's NER has its own token encoder).
    names = list(getattr(nlp, "pipe_names", ()))
    others = [name for name in names if name != "ner"] if "ner" in names else []
    docs = nlp.pipe(texts, disable=others) if others else nlp.pipe(texts)
    for doc in docs:
        yield [
            (clean_entity_text(ent.text), ent.label_)
            for ent in doc.ents
            if ent.label_ in NAMED_LABELS
        ]


def _discoverable(words: tuple[str, ...], query_entities: list[tuple[str, ...]]) -> bool:
    if not words or all(is_stopword(w) or w in CALENDAR_WORDS for w in words):
        return False
    if len(words) == 1 and (len(words[0]) < 2 or words[0].isdigit()):
        return False
    candidate = set(words)
    return not any(candidate <= set(q) or set(q) <= candidate for q in query_entities)
