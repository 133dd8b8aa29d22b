"""Stage 1: query analysis. A query becomes entities, weighted search terms and a time range.

With a spaCy pipeline, entities come from NER and term weights from part-of-speech tags; without
one, a rule-based extractor reads capitalized word sequences, acronyms, quoted strings and
numbers. Both paths share the word rules below (tokenizer, stopwords, light stemmer), which
the lexical stage also uses to read turns.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from smartsearch_mcp.dates import DateRange, find_time_range
from smartsearch_mcp.pipeline.language import language_warning
from smartsearch_mcp.pipeline.words import (
    CALENDAR_WORDS,
    CONTRACTION_RE,
    GO_ON_WORDS,
    NEWS_WORDS,
    REQUEST_VERBS,
    STOPWORDS,
    WORD_RE,
    chat_spellings,
    is_stopword,
    light_stem,
    normalize_word,
    sanitize_text,
    tokenize_words,
)

log = logging.getLogger(__name__)

TermKind = Literal[
    "entity",  # a whole named entity or quoted string, matched as a phrase
    "entity_part",  # one significant word of a multiword entity
    "proper",  # a proper noun outside any entity
    "noun",
    "number",
    "word",  # verbs, adjectives, adverbs; rule-based content words
    "variant",  # a lemma or stem of another term, so inflections match too
    "prf",  # pseudo-relevance feedback
    "hop",  # an entity discovered in first hits (multi-hop expansion)
]

ENTITY_WEIGHT = 3.0
ENTITY_PART_WEIGHT = 1.5
PROPER_WEIGHT = 2.0
NOUN_WEIGHT = 1.5
NUMBER_WEIGHT = 1.5
WORD_WEIGHT = 1.0
# Rule-based content words: without part-of-speech tags nouns and verbs look alike.
RULE_WORD_WEIGHT = 1.25
VARIANT_FACTOR = 0.8
MAX_TERMS = 64
# Only this much of a query is analyzed; the full text is kept in QueryAnalysis.query.
MAX_ANALYZED_CHARS = 4000
# A longer term is not searched for as text: matching it on whole-word boundaries costs its
# length at every place it may start (a 4,000-character word over long repetitive turns ran
# for minutes), and no real word or name is this long.
MAX_TERM_CHARS = 100

# spaCy labels that name something; DATE, CARDINAL, MONEY... give number terms instead.
NAMED_LABELS = frozenset(
    ["PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
     "LANGUAGE"]
)  # fmt: skip


_QUOTED_RE = re.compile(r'"([^"\n]{2,120})"|“([^”\n]{2,120})”|(?<!\w)\'([^\'\n]{2,120})\'(?!\w)')
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE_END = frozenset(".!?:;\n\r")
_OPENERS = frozenset("\"'“‘([{*-–—•>")
_NAME_CONNECTORS = frozenset({"of", "the", "de", "da", "del", "der", "van", "von", "la", "le"})
_TITLES = frozenset({"mr", "mrs", "ms", "dr", "prof", "st", "mt", "sr", "jr"})


@dataclass(frozen=True, slots=True)
class Entity:
    """A named thing in a text: its surface form and label (spaCy's, or NAME / ACRONYM /
    QUOTED from the rule-based extractor)."""

    text: str
    label: str


@dataclass(frozen=True, slots=True)
class WeightedTerm:
    """A lowercase search term and what a match on it is worth.

    `inflect`: also match English inflections of the word ("paint" matches "painted",
    "painting"). `group`: terms of one group count once, at the best weight matched (a word
    and its variant); None means the term is its own group.
    """

    term: str
    weight: float
    kind: TermKind
    inflect: bool = False
    group: str | None = None

    @property
    def group_key(self) -> str:
        return self.group if self.group is not None else self.term


@dataclass(frozen=True, slots=True)
class QueryAnalysis:
    """What recall searches for. `terms` are sorted by weight, heaviest first.

    `has_content`: the query names something to search for — a content word, a name, a
    number or a date. "?", "...", "hmm" or only stopwords do not, and recall returns nothing
    for them rather than the whole memory. `warnings` say what the analysis could not read
    well (a question in a language the English models do not cover, a query with no content).
    """

    query: str
    entities: tuple[Entity, ...]
    terms: tuple[WeightedTerm, ...]
    time_range: DateRange | None
    extractor: str
    has_content: bool = True
    warnings: tuple[str, ...] = ()


def analyze_query(query: str, nlp: Any | None, reference: datetime | None = None) -> QueryAnalysis:
    """Read `query` into entities, weighted terms and a time range.

    `nlp` is a loaded spaCy pipeline with NER, or None for the rule-based extractor. Relative
    dates ("last week") are resolved against `reference` (default: now). Any string is safe,
    including control characters and lone surrogates.
    """
    text = sanitize_text(query[:MAX_ANALYZED_CHARS])
    time_range = find_time_range(text, reference or datetime.now())
    time_span = _span_of(text, time_range)
    builder = _TermBuilder()
    if nlp is not None:
        entities = _analyze_with_spacy(text, nlp, time_span, builder)
        extractor = spacy_extractor_name(nlp)
    else:
        entities = _analyze_with_rules(text, time_span, builder)
        extractor = "rules"
    terms = builder.build()
    has_content = bool(entities) or time_range is not None or has_content_terms(terms)
    warnings: list[str] = []
    if not has_content:
        warnings.append(
            f"the query {_shown(query)} names nothing to search for (no content word, name, "
            "number or date), so nothing was recalled; ask about a topic, person or time, or "
            "list the latest turns with timeline"
        )
    elif (foreign := language_warning(text)) is not None:
        warnings.append(foreign)
    return QueryAnalysis(
        query=query,
        entities=tuple(entities),
        terms=terms,
        time_range=time_range,
        extractor=extractor,
        has_content=has_content,
        warnings=tuple(warnings),
    )


def has_content_terms(terms: Iterable[WeightedTerm]) -> bool:
    """True when some term is more than a filler: interjections spelled long ("hmmm",
    "ahhh", "zzz": one or two letters, one of them repeated three times), a request verb
    with nothing to request ("remind me", "show"), a prompt to carry on ("go", "continue"),
    a word asking what is new ("any updates?", "what's new") and a number of one or two
    digits alone (an option picked or a vote: "2", "+1") say nothing."""
    return any(
        not _is_drawn_out_filler(term.term)
        and term.term not in REQUEST_VERBS
        and term.term not in GO_ON_WORDS
        and term.term not in NEWS_WORDS
        and not (term.term.isdigit() and len(term.term) <= 2)
        for term in terms
        if term.kind != "variant"
    )


def names_only_a_time(analysis: QueryAnalysis) -> bool:
    """Whether the question names nothing but a time: "today", "what did we do yesterday?"
    (a name is a term too)."""
    return analysis.time_range is not None and not has_content_terms(analysis.terms)


def _is_drawn_out_filler(word: str) -> bool:
    return (
        word.isalpha()
        and len(set(word)) <= 2
        and any(word.count(letter) >= 3 for letter in set(word))
    )


def _shown(query: str) -> str:
    shown = query.strip()
    return repr(shown if len(shown) <= 40 else shown[:40] + "…")


def spacy_extractor_name(nlp: Any) -> str:
    """'spacy:<package>' for a loaded pipeline, e.g. 'spacy:en_core_web_sm'."""
    meta = getattr(nlp, "meta", None) or {}
    name, lang = meta.get("name"), meta.get("lang")
    return f"spacy:{lang}_{name}" if name and lang else "spacy"


def extract_entities_rules(text: str) -> list[Entity]:
    """Names in `text` without a model: capitalized word sequences (a sentence's first word
    only when it is not a stopword), camel-case words, acronyms, and quoted strings.

    Names may join with lowercase connectors ("Gulf of Finland"); titles like "Dr." stay
    with the name. Weekday and month names are left to the date reader.
    """
    return [entity for entity, _ in _rule_entities(text)]


def _rule_entities(text: str) -> list[tuple[Entity, tuple[int, int]]]:
    """Rule-based entities with their character spans, first occurrence of each."""
    found: list[tuple[Entity, tuple[int, int]]] = []
    seen: set[str] = set()
    quoted_spans: list[tuple[int, int]] = []
    for match in _QUOTED_RE.finditer(text):
        index = next(i for i, g in enumerate(match.groups(), 1) if g is not None)
        quoted = clean_entity_text(match.group(index))
        if quoted.lower() not in seen and any(not is_stopword(w) for w in tokenize_words(quoted)):
            seen.add(quoted.lower())
            found.append((Entity(quoted, "QUOTED"), match.span()))
            quoted_spans.append(match.span())
    for surface, label, span in _capitalized_runs(text):
        if surface.lower() in seen or any(_overlaps(*span, quoted) for quoted in quoted_spans):
            continue
        seen.add(surface.lower())
        found.append((Entity(surface, label), span))
    return found


def _capitalized_runs(text: str) -> Iterable[tuple[str, str, tuple[int, int]]]:
    """Maximal runs of name-like words, as (surface text, label, span)."""
    run: list[re.Match[str]] = []
    pending: list[re.Match[str]] = []  # connectors waiting for a following name word
    previous_end = 0

    def flush() -> Iterable[tuple[str, str, tuple[int, int]]]:
        words = list(run)
        while words and _is_stop_token(words[0].group()):
            words.pop(0)
        while words and _is_stop_token(words[-1].group()):
            words.pop()
        if not words:
            return
        lowered = [normalize_word(w.group()) for w in words]
        if all(w in CALENDAR_WORDS or is_stopword(w) for w in lowered):
            return
        start = words[0].start()
        surface = _strip_possessive(text[start : words[-1].end()])
        raw = words[0].group()
        label = "ACRONYM" if len(words) == 1 and raw.isupper() and len(raw) > 1 else "NAME"
        yield surface, label, (start, start + len(surface))

    for match in WORD_RE.finditer(text):
        word = match.group()
        gap = text[previous_end : match.start()]
        previous_end = match.end()
        joined = not gap.strip() or (
            gap.strip() == "." and bool(run) and _is_title(run[-1].group())
        )
        if run and not joined:
            yield from flush()
            run, pending = [], []
        if _is_name_word(word, _is_sentence_start(text, match.start())):
            run.extend(pending)
            pending = []
            run.append(match)
            if CONTRACTION_RE.search(word):
                yield from flush()  # "Halvard's friend": the possessive ends the name
                run = []
        elif run and word.lower() in _NAME_CONNECTORS and len(pending) < 2:
            pending.append(match)
        else:
            if run:
                yield from flush()
            run, pending = [], []
    if run:
        yield from flush()


def _is_name_word(word: str, sentence_initial: bool) -> bool:
    first = word[0]
    camel = len(word) > 1 and any(c.isupper() for c in word[1:]) and word[0].isalpha()
    if not (first.isupper() or camel):
        return False
    lowered = normalize_word(word)
    if is_stopword(lowered):
        return False
    if sentence_initial and not word.isupper():
        # A capitalized first word is only a name if it does not look like a verb.
        verb_form = len(lowered) > 5 and lowered.endswith(("ing", "ed"))
        return not verb_form and lowered not in REQUEST_VERBS
    return True


def _is_stop_token(word: str) -> bool:
    return normalize_word(word) in STOPWORDS or word.lower() in _NAME_CONNECTORS


def _is_title(word: str) -> bool:
    return word.lower() in _TITLES


def _is_sentence_start(text: str, index: int) -> bool:
    i = index - 1
    while i >= 0 and (text[i].isspace() or text[i] in _OPENERS):
        if text[i] in "\n\r":
            return True
        i -= 1
    return i < 0 or text[i] in _SENTENCE_END


def _strip_possessive(surface: str) -> str:
    return re.sub(r"(?:['’]s?)$", "", surface.strip())


def _span_of(text: str, time_range: DateRange | None) -> tuple[int, int]:
    if time_range is None or not time_range.expression:
        return (0, 0)
    start = text.find(time_range.expression)
    return (start, start + len(time_range.expression)) if start >= 0 else (0, 0)


def variant_term(variant: str, of: str, weight: float) -> WeightedTerm | None:
    """`variant` searched for the term `of` (weighing `weight`): at `VARIANT_FACTOR` of its
    weight, in its group; None when it is `of` itself, a stopword or not a plain word."""
    variant = variant.strip().lower()
    if not variant or variant == of or is_stopword(variant) or not variant.isalpha():
        return None
    return WeightedTerm(
        variant, round(weight * VARIANT_FACTOR, 4), "variant", inflect=True, group=of
    )


def with_terms(analysis: QueryAnalysis, extra: Sequence[WeightedTerm]) -> QueryAnalysis:
    """`analysis` with `extra` terms, all sorted by weight, heaviest first (ties in order):
    what the memory adds to the question (names of relations, misspellings)."""
    terms = sorted([*analysis.terms, *extra], key=lambda t: -t.weight)
    return replace(analysis, terms=tuple(terms))


class _TermBuilder:
    """Collects terms, keeping the heaviest entry per term text, in first-seen order."""

    def __init__(self) -> None:
        self._terms: dict[str, tuple[int, WeightedTerm]] = {}

    def add(self, term: str, weight: float, kind: TermKind, *, inflect: bool = False) -> None:
        term = term.strip().lower()
        if not term or is_stopword(term) or not any(c.isalnum() for c in term):
            return
        if len(term) > MAX_TERM_CHARS:
            log.info("query term of %d characters not searched as text", len(term))
            return
        self._put(WeightedTerm(term, weight, kind, inflect=inflect))
        if inflect and kind in ("noun", "word"):
            stem = light_stem(term)
            if stem != term and len(stem) > 2:
                self.add_variant(stem, term, weight)
        if kind in ("noun", "word", "proper"):
            for spelling in chat_spellings(term):
                self.add_variant(spelling, term, weight)

    def add_variant(self, variant: str, of: str, weight: float) -> None:
        term = variant_term(variant, of, weight)
        if term is not None:
            self._put(term)

    def _put(self, term: WeightedTerm) -> None:
        current = self._terms.get(term.term)
        if current is None:
            self._terms[term.term] = (len(self._terms), term)
        elif term.weight > current[1].weight:
            self._terms[term.term] = (current[0], term)

    def build(self) -> tuple[WeightedTerm, ...]:
        ranked = sorted(self._terms.values(), key=lambda item: (-item[1].weight, item[0]))
        return tuple(term for _, term in ranked[:MAX_TERMS])


def _add_entity(builder: _TermBuilder, surface: str) -> None:
    words = tokenize_words(surface)
    if not words:
        return
    builder.add(" ".join(words) if len(words) > 1 else words[0], ENTITY_WEIGHT, "entity")
    if len(words) > 1:
        for word in words:
            if not is_stopword(word) and word not in CALENDAR_WORDS and word not in _TITLES:
                builder.add(word, ENTITY_PART_WEIGHT, "entity_part")


def _overlaps(start: int, end: int, span: tuple[int, int]) -> bool:
    return start < span[1] and span[0] < end


def _analyze_with_rules(
    text: str, time_span: tuple[int, int], builder: _TermBuilder
) -> list[Entity]:
    entities = []
    covered: list[tuple[int, int]] = [time_span]
    for entity, span in _rule_entities(text):
        if _overlaps(*span, time_span):
            continue
        entities.append(entity)
        _add_entity(builder, entity.text)
        covered.append(span)
    for match in WORD_RE.finditer(text):
        if any(_overlaps(match.start(), match.end(), span) for span in covered):
            continue
        word = normalize_word(match.group())
        if _NUMBER_RE.fullmatch(word):
            builder.add(word, NUMBER_WEIGHT, "number")
        elif not is_stopword(word):
            builder.add(word, RULE_WORD_WEIGHT, "word", inflect=word.isalpha())
    return entities


_POS_WEIGHTS: dict[str, tuple[float, TermKind]] = {
    "PROPN": (PROPER_WEIGHT, "proper"),
    "NOUN": (NOUN_WEIGHT, "noun"),
    "NUM": (NUMBER_WEIGHT, "number"),
    "VERB": (WORD_WEIGHT, "word"),
    "ADJ": (WORD_WEIGHT, "word"),
    "ADV": (WORD_WEIGHT, "word"),
    "X": (WORD_WEIGHT, "word"),
}


def _analyze_with_spacy(
    text: str, nlp: Any, time_span: tuple[int, int], builder: _TermBuilder
) -> list[Entity]:
    doc = nlp(text)
    entities: list[Entity] = []
    seen: set[str] = set()
    covered: list[tuple[int, int]] = [time_span]
    for ent in doc.ents:
        if ent.label_ not in NAMED_LABELS or _overlaps(ent.start_char, ent.end_char, time_span):
            continue
        surface = clean_entity_text(ent.text)
        if not surface or all(is_stopword(w) for w in tokenize_words(surface)):
            continue
        covered.append((ent.start_char, ent.end_char))
        if surface.lower() not in seen:
            seen.add(surface.lower())
            entities.append(Entity(surface, ent.label_))
            _add_entity(builder, surface)
    for match in _QUOTED_RE.finditer(text):
        quoted = clean_entity_text(next(g for g in match.groups() if g is not None))
        if quoted.lower() in seen or all(is_stopword(w) for w in tokenize_words(quoted)):
            continue
        seen.add(quoted.lower())
        entities.append(Entity(quoted, "QUOTED"))
        _add_entity(builder, quoted)
        covered.append(match.span())
    for token in doc:
        start = token.idx
        if any(_overlaps(start, start + len(token.text), span) for span in covered):
            continue
        weight_kind = _POS_WEIGHTS.get(token.pos_)
        if weight_kind is None:
            continue
        weight, kind = weight_kind
        words = [normalize_word(w) for w in WORD_RE.findall(token.text)]
        lemma = token.lemma_.lower()
        for word in words:
            if is_stopword(word):
                continue
            if kind != "proper" and _NUMBER_RE.fullmatch(word):
                builder.add(word, NUMBER_WEIGHT, "number")
                continue
            inflect = kind in ("noun", "word") and word.isalpha()
            builder.add(word, weight, kind, inflect=inflect)
            if inflect and len(words) == 1 and lemma != word and len(lemma) > 2:
                builder.add_variant(lemma, word, weight)
    return entities


def clean_entity_text(surface: str) -> str:
    """An entity's surface form without surrounding quotes or punctuation, a leading article
    or a possessive ("the Space Needle's" -> "Space Needle")."""
    surface = _strip_possessive(surface.strip(" \t\n\"'“”‘’()[]{}.,;:!?"))
    surface = re.sub(r"^(?:the|a|an)\s+", "", surface, flags=re.IGNORECASE)
    return surface.strip()
