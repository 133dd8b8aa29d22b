"""Misspelled words: a question's word is also searched as the memory misspells it, and a word
the question misspells as the memory spells it ("restaurant" ↔ "resturant"; part of stage 2).

Chats are typed fast, and grep matches letters: "resturant" is never found by "restaurant".
A word of the memory one edit away from a word of the question (a letter left out, added or
changed, or two letters swapped) is taken as the same word misspelled when at least one of
the two is not a word the tokenizer knows whole, nor an inflection of one. The BPE vocabulary
(o200k_base) holds the commonest English words as single tokens ("restaurant" is one token,
"resturant" two), and many of their inflections ("hiked" is two tokens, "hike" one), so two
real words one edit apart ("horse" and "house", "eating" and "hating") are not taken for each
other. Words shorter than `MIN_CHARS` letters are left alone: one edit turns most of them
into another word. The spelling found is searched by grep as a variant of the question's word
(BM25 reads the question's own words).
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Collection, Iterable

from smartsearch_mcp.pipeline.analyze import QueryAnalysis, WeightedTerm, variant_term, with_terms
from smartsearch_mcp.pipeline.words import light_stem
from smartsearch_mcp.tokens import ESTIMATE, TokenCounter

# The shortest word compared (the longer of the two words may not be shorter than this).
MIN_CHARS = 5
# The longest word looked up: `one_edit` builds about 54 strings per letter, each as long as
# the word, so a pasted blob of 10,000 letters would cost gigabytes; no word people misspell
# is this long.
MAX_CHARS = 32
# At most this many distinct words of one question are looked up (a question pasted with a
# log in it has thousands); the rest are searched as they are spelled.
MAX_LOOKUPS = 64
# At most this many spellings are searched for one word of the question.
MAX_SPELLINGS = 3
# The kinds of question terms that are words someone could misspell.
_SPELLED_KINDS = frozenset({"entity", "entity_part", "proper", "noun", "word"})
_QUESTION_WORD = re.compile(r"[A-Za-z]+")
# What separates words besides spaces (faster than a regex over a whole scope).
_SEPARATORS = str.maketrans(dict.fromkeys(string.punctuation + string.digits + "’‘“”…–—«»¿¡", " "))
_LETTERS = string.ascii_lowercase


def memory_words(lowered: Iterable[str]) -> frozenset[str]:
    """The words of `lowered` texts of at least `MIN_CHARS` - 1 characters, split at spaces,
    digits and punctuation: the words a question's word may be one edit away from (collected
    once per cached scope)."""
    words: set[str] = set()
    for text in lowered:
        words.update(text.translate(_SEPARATORS).split())
    return frozenset(word for word in words if len(word) >= MIN_CHARS - 1)


def one_edit(word: str) -> set[str]:
    """Every string one edit away from `word` (lowercase ASCII letters): one letter deleted,
    inserted or replaced, or two neighbouring letters swapped."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deleted = {a + b[1:] for a, b in splits if b}
    swapped = {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]}
    replaced = {a + c + b[1:] for a, b in splits if b for c in _LETTERS if c != b[0]}
    inserted = {a + c + b for a, b in splits for c in _LETTERS}
    return (deleted | swapped | replaced | inserted) - {word}


class KnownWords:
    """Whether the tokenizer's vocabulary holds a word, or the word without its inflection
    (`words.light_stem`, also with an "e": "hiked" -> "hike"), whole (one token after a
    space), for telling a misspelling from a real word. Thread-safe; remembers what it was
    asked."""

    def __init__(self, counter: TokenCounter, capacity: int = 200_000) -> None:
        self.counter = counter
        self.capacity = capacity
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        """False with the estimated token count, which knows no vocabulary."""
        return self.counter.name != ESTIMATE

    def __call__(self, word: str) -> bool:
        with self._lock:
            known = self._known.get(word)
        if known is None:
            stem = light_stem(word)
            forms = (word, stem, stem + "e") if stem != word else (word,)
            known = any(self.counter.count(" " + form) == 1 for form in forms)
            with self._lock:
                if len(self._known) >= self.capacity:
                    self._known.clear()
                self._known[word] = known
        return known


def _one_edit_in(word: str, words: frozenset[str]) -> list[str]:
    """The memory's `words` one edit away from `word`, the longer of each pair at least
    `MIN_CHARS` letters (none for a word longer than `MAX_CHARS`)."""
    if len(word) > MAX_CHARS:
        return []
    return [w for w in one_edit(word) & words if max(len(w), len(word)) >= MIN_CHARS]


def misspellings(term: str, words: frozenset[str], known: KnownWords) -> list[str]:
    """The words of the memory (`words`) that are `term` misspelled, or that `term` is a
    misspelling of: one edit away, not both known words; at most `MAX_SPELLINGS`, the
    unknown ones (the memory's misspellings) first, then in alphabetical order."""
    if not term.isalpha() or len(term) < MIN_CHARS - 1:
        return []
    term_known = known(term)
    found = [(known(word), word) for word in _one_edit_in(term, words)]
    found = [(word_known, word) for word_known, word in found if not (term_known and word_known)]
    return [word for _, word in sorted(found)[:MAX_SPELLINGS]]


def with_misspellings(
    analysis: QueryAnalysis,
    words: frozenset[str],
    known: KnownWords,
    speakers: Collection[str] = (),
) -> QueryAnalysis:
    """`analysis` with each word's misspellings in the memory searched as its variants (the
    same analysis when there are none, or when `known` has no vocabulary). The names of the
    memory's `speakers` (lowercase) are not looked up: the memory spells them right where it
    says who speaks, and its misspellings of them are mostly others addressing them ("omg
    Halvrad"), while what a speaker said is found by who said it. A question misspelling a
    speaker's name still finds the name."""
    if not known.available:
        return analysis
    present = {t.term for t in analysis.terms}
    extra: list[WeightedTerm] = []
    looked_up = 0
    for term in analysis.terms:
        if term.kind not in _SPELLED_KINDS or " " in term.term or term.term in speakers:
            continue
        looked_up += 1
        if looked_up > MAX_LOOKUPS:
            break
        for word in misspellings(term.term, words, known):
            variant = variant_term(word, term.term, term.weight)
            if variant is not None and variant.term not in present:
                present.add(variant.term)
                extra.append(variant)
    if not extra:
        return analysis
    return with_terms(analysis, extra)


def corrected_question(query: str, words: frozenset[str], known: KnownWords) -> str:
    """`query` with each word it misspells written as the memory spells it, for the
    bi-encoder, which reads a misspelled word as other word pieces ("attnetion"): a word of
    the question that is no known word and not in the memory's `words`, with exactly one word
    of the memory one edit away ("Halvrd" -> "Halvard", "resturant" -> "restaurant"; two
    candidates, "hourse" -> "house" or "horse", leave it as it is). Grep searches both
    (`with_misspellings`); the question as asked stays the question everywhere else."""
    if not known.available:
        return query
    spellings: dict[str, str | None] = {}  # each distinct word looked up once

    def fix(match: re.Match[str]) -> str:
        word = match.group()
        low = word.lower()
        if not MIN_CHARS - 1 <= len(low) <= MAX_CHARS or low in words:
            return word
        if low not in spellings:
            if len(spellings) >= MAX_LOOKUPS or known(low):
                return word
            found = _one_edit_in(low, words)
            spellings[low] = found[0] if len(found) == 1 else None
        spelled = spellings[low]
        if spelled is None:
            return word
        if word.isupper():
            return spelled.upper()
        return spelled.capitalize() if word[0].isupper() else spelled

    return _QUESTION_WORD.sub(fix, query)
