"""How often grep's term patterns match many texts, each pattern run once over the texts
joined together instead of once per text.

Grep mode scores every passage of a scope for every query term (and again for the feedback
terms): calling a pattern on 100,000 texts one by one costs a Python call per text and term,
while one `finditer` over the joined texts costs one call per match. The counts are exactly
those of matching each text alone: texts are joined by `SEPARATOR`, which no match can cross
(see `count_matches`), and a pattern that could contain it is matched text by text.

A term whose every match is one whole word (a word and its inflections, `TermPattern.word`)
is counted faster still from a `WordIndex` of the texts, when there is one: each text's words
as ids, matched in one vectorised pass; a phrase or a number (`TermPattern.words`) is run
only on the texts holding its words in a row. The counts are the same (tested against the
scan).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

# Four NUL characters between two texts: more non-word characters than the gap a phrase
# allows between its words (`lexical._PHRASE_GAP`, at most three), and seen by a look-behind
# or look-ahead as no word character, like the start or end of a text.
SEPARATOR = "\x00" * 4
CHUNK_TEXTS = 4096  # texts joined for one scan: bounds the copy a scan makes
MAX_CAP = 255  # counts are kept as bytes
WORD = re.compile(r"\w+")  # a word of `WordIndex`: what grep's word boundaries delimit
_LAST_CHAR = chr(0x10FFFF)


class TermPattern(NamedTuple):
    """How grep finds one term (see `lexical.term_pattern`)."""

    literal: str  # a substring of every match, the pattern's start
    pattern: re.Pattern[str]
    # For a term whose every match is one whole word of the text (a `WORD` run): a
    # pattern that fullmatches exactly the words that are its matches; None otherwise.
    word: re.Pattern[str] | None = None
    # For a term whose every match is these words one after the other (a phrase, a number):
    # the texts holding them in a row are the only ones the pattern needs to be run on.
    words: tuple[str, ...] | None = None


def _sorted_words(vocabulary: dict[str, int], before: WordIndex | None) -> list[str]:
    """`vocabulary` sorted; after an index `before` (whose words come first in it), its
    sorted words with the few new ones put in place (sorting a large vocabulary again on
    every write took most of extending the index)."""
    if before is None:
        return sorted(vocabulary)
    new = sorted(list(vocabulary)[len(before.vocabulary) :])
    if len(new) * 64 > len(before.sorted_words):
        return sorted(vocabulary)
    words = list(before.sorted_words)
    for word in new:
        bisect.insort(words, word)
    return words


class _Room:
    """An index's word ids with room to grow, shared with the indexes extending it: each
    sees its own first rows (`ids` is a view), and an extension writes after the last row
    used, so extending a large index after a write does not copy it (that copy took most of
    the time a recall right after a write added)."""

    SPARE = 1 / 16  # of the ids, left free when the array is made again (at least MIN_SPARE)
    MIN_SPARE = 4096

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.used = len(array)
        self.lock = threading.Lock()

    def appended(self, length: int, parts: list[np.ndarray]) -> tuple[_Room, np.ndarray]:
        """(the room, the ids) of an index whose first `length` ids are this room's and
        whose next ones are `parts`: written in place when this room has space after exactly
        `length` used ids, else copied into a new room."""
        size = length + sum(len(part) for part in parts)
        with self.lock:
            if self.used == length and size <= len(self.array):
                _write(self.array, length, parts)
                self.used = size
                return self, self.array[:size]
        array = np.empty(size + max(int(size * _Room.SPARE), _Room.MIN_SPARE), dtype=np.int32)
        array[:length] = self.array[:length]
        _write(array, length, parts)
        room = _Room(array)
        room.used = size
        return room, array[:size]


def _write(array: np.ndarray, position: int, parts: list[np.ndarray]) -> None:
    for part in parts:
        array[position : position + len(part)] = part
        position += len(part)


class WordIndex:
    """The words (`WORD` runs) of lowercase texts as ids, text after text: how often a
    whole-word term matches each text is then one pass over the ids, not a regex scan of
    every character. Built once per cached corpus: it costs about three scans."""

    ids: np.ndarray  # every text's word ids, text after text (a view of `_room`)
    starts: np.ndarray  # where each text's ids start
    vocabulary: dict[str, int]  # word -> id

    def __init__(self, lowered: Sequence[str], _after: WordIndex | None = None) -> None:
        # `_after`: an index of earlier texts these follow (see `extended`)
        vocabulary: dict[str, int] = {} if _after is None else dict(_after.vocabulary)
        add = vocabulary.setdefault
        parts: list[np.ndarray] = []  # per chunk of texts: a list holds 8 bytes per word
        lengths = np.zeros(len(lowered), dtype=np.int64)
        for start in range(0, len(lowered), CHUNK_TEXTS):
            ids: list[int] = []
            for index, text in enumerate(lowered[start : start + CHUNK_TEXTS], start):
                words = WORD.findall(text)
                lengths[index] = len(words)
                ids.extend([add(word, len(vocabulary)) for word in words])
            parts.append(np.asarray(ids, dtype=np.int32))  # 2**31 words would not fit memory
        ids_before = np.zeros(0, dtype=np.int32) if _after is None else _after.ids
        if _after is None:
            self._room = _Room(np.concatenate([ids_before, *parts]))
            self.ids = self._room.array
        else:
            self._room, self.ids = _after._room.appended(len(ids_before), parts)
        starts = np.zeros(len(lowered), dtype=np.int64)
        if len(lowered) > 1:
            np.cumsum(lengths[:-1], out=starts[1:])
        starts += len(ids_before)
        self.starts = starts if _after is None else np.concatenate([_after.starts, starts])
        self.vocabulary = vocabulary
        self.sorted_words = _sorted_words(vocabulary, _after)

    sorted_words: list[str]  # the vocabulary, sorted

    def extended(self, lowered: Sequence[str]) -> WordIndex:
        """The index of this index's texts followed by `lowered` (this one is unchanged: a
        query may be reading it)."""
        return WordIndex(lowered, _after=self)

    def __len__(self) -> int:
        return len(self.starts)

    def count(self, literal: str, word: re.Pattern[str], cap: int) -> np.ndarray:
        """How many words of each text `word` fullmatches (each starting with `literal`),
        at most `cap`."""
        low = bisect.bisect_left(self.sorted_words, literal)
        high = bisect.bisect_left(self.sorted_words, literal + _LAST_CHAR, low)
        found = [
            self.vocabulary[one]
            for one in self.sorted_words[low:high]
            if one.startswith(literal) and word.fullmatch(one)
        ]
        counts = np.zeros(len(self), dtype=np.uint8)
        if not found:
            return counts
        owner = self._owners(self._where(found))
        np.minimum(np.bincount(owner, minlength=len(self)), cap, out=counts, casting="unsafe")
        return counts

    def holding_any(self, words: Sequence[str]) -> np.ndarray:
        """The texts (indices, ascending) holding any of `words`."""
        found = [self.vocabulary[word] for word in words if word in self.vocabulary]
        if not found:
            return np.zeros(0, dtype=np.int64)
        return np.unique(self._owners(self._where(found)))

    def holding(self, words: Sequence[str]) -> np.ndarray:
        """The texts (indices, ascending) where `words` follow one another (a run that
        crosses from one text into the next is counted in the first)."""
        ids = [self.vocabulary.get(word) for word in words]
        if not ids or None in ids or len(self.ids) < len(ids):
            return np.zeros(0, dtype=np.int64)
        span = len(self.ids) - len(ids) + 1
        row = self.ids[:span] == ids[0]
        for offset, one in enumerate(ids[1:], start=1):
            row &= self.ids[offset : offset + span] == one
        return np.unique(self._owners(np.flatnonzero(row)))

    def _where(self, found: list[int]) -> np.ndarray:
        """The positions in `ids` of any of the word ids `found`."""
        if len(found) == 1:
            return np.flatnonzero(self.ids == found[0])
        wanted = np.zeros(len(self.vocabulary), dtype=bool)
        wanted[found] = True
        return np.flatnonzero(wanted[self.ids])

    def _owners(self, positions: np.ndarray) -> np.ndarray:
        """The text each of `positions` in `ids` belongs to."""
        return np.searchsorted(self.starts, positions, side="right") - 1


class TermCounts:
    """How often each pattern matches each of `texts` (lowercased before matching, as
    `TermMatcher.score` lowercases, unless they are `lowered` already), counted once per
    pattern and kept: the idf of the query's terms and their scores read the same counts."""

    def __init__(
        self,
        texts: Sequence[str],
        cap: int,
        lowered: bool = False,
        words: WordIndex | None = None,
    ) -> None:
        if words is not None and len(words) != len(texts):
            raise ValueError(f"a word index of {len(words)} texts for {len(texts)} texts")
        self.texts = texts
        self.cap = cap
        self.lowered = lowered
        self.words = words  # of these texts, lowercased: whole-word terms are counted in it
        self._rows: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def rows(self, patterns: Sequence[TermPattern]) -> list[np.ndarray]:
        """One row per term: its number of matches in each text, capped at `cap` (the terms
        not counted yet are counted in one pass over the texts or their words)."""
        todo = {t.pattern.pattern: t for t in patterns if t.pattern.pattern not in self._rows}
        if self.words is not None:
            for key, term in list(todo.items()):
                if term.word is not None:
                    self._rows[key] = self.words.count(term.literal, term.word, self.cap)
                elif term.words is not None:
                    self._rows[key] = self._confirmed(term, self.words.holding(term.words))
                else:
                    continue
                del todo[key]
        if todo:
            scanned = [(t.literal, t.pattern) for t in todo.values()]
            counted = count_matches(scanned, self.texts, self.cap, self.lowered)
            self._rows.update(zip(todo, counted, strict=True))
        return [self._rows[t.pattern.pattern] for t in patterns]

    def _confirmed(self, term: TermPattern, holding: np.ndarray) -> np.ndarray:
        """The term's counts, its pattern run on the texts `holding` its words only."""
        counts = np.zeros(len(self.texts), dtype=np.uint8)
        for index in holding.tolist():
            text = self.texts[index]
            low = text if self.lowered else text.lower()
            counts[index] = count_capped(term.literal, term.pattern, low, self.cap)
        return counts

    def documents(self, patterns: Sequence[TermPattern]) -> list[int]:
        """For each pattern, how many of the texts it matches."""
        return [int(np.count_nonzero(row)) for row in self.rows(patterns)]


def count_matches(
    patterns: Sequence[tuple[str, re.Pattern[str]]],
    texts: Sequence[str],
    cap: int,
    lowered: bool = False,
) -> list[np.ndarray]:
    """For each (literal, pattern) — the pattern starting with its literal, as
    `lexical.term_pattern` makes them — how many non-overlapping matches it has in each
    lowercased text, at most `cap`: what `pattern.finditer(text.lower())` counts. `lowered`:
    the texts are lowercase already (lowercasing again changes no character) and are
    matched as they are.

    Texts are joined `CHUNK_TEXTS` at a time by `SEPARATOR`, each pattern runs once over the
    join, and each match is given to the text it starts in. No match crosses a separator:
    patterns consume word characters, their literal and, between the words of a phrase,
    one to three non-word characters, never the four of a separator — unless the pattern
    itself holds a NUL, and such a pattern is matched text by text."""
    if not 1 <= cap <= MAX_CAP:
        raise ValueError(f"cap must be between 1 and {MAX_CAP}, got {cap}")
    counts = [np.zeros(len(texts), dtype=np.uint8) for _ in patterns]
    joined = [i for i, (_, p) in enumerate(patterns) if "\x00" not in p.pattern]
    alone = [i for i, (_, p) in enumerate(patterns) if "\x00" in p.pattern]
    for start in range(0, len(texts), CHUNK_TEXTS):
        chunk = texts[start : start + CHUNK_TEXTS]
        low = (list(chunk) if lowered else [text.lower() for text in chunk]) if alone else None
        if joined:
            text, starts = _joined(chunk, lowered)
            for i in joined:
                found = [m.start() for m in patterns[i][1].finditer(text)]
                if found:
                    owner = np.searchsorted(starts, found, side="right") - 1
                    hits = np.bincount(owner, minlength=len(chunk))
                    counts[i][start : start + len(chunk)] = np.minimum(hits, cap)
        for i in alone:
            assert low is not None
            literal, pattern = patterns[i]
            counts[i][start : start + len(chunk)] = [
                count_capped(literal, pattern, one, cap) for one in low
            ]
    return counts


def _joined(texts: Sequence[str], lowered: bool) -> tuple[str, np.ndarray]:
    """The lowercased texts joined by `SEPARATOR`, and where each starts in the join."""
    joined = SEPARATOR.join(texts)
    if lowered or joined.isascii():  # lowercasing keeps every length
        lengths = [len(text) for text in texts]
        joined = joined if lowered else joined.lower()
    else:  # a few characters lowercase to two ("İ"): lowercase each text alone
        each = [text.lower() for text in texts]
        lengths = [len(text) for text in each]
        joined = SEPARATOR.join(each)
    starts = np.zeros(len(texts), dtype=np.int64)
    if len(texts) > 1:
        np.cumsum(np.asarray(lengths[:-1], dtype=np.int64) + len(SEPARATOR), out=starts[1:])
    return joined, starts


def count_capped(literal: str, pattern: re.Pattern[str], low: str, cap: int) -> int:
    """How many times `pattern` (whose every match holds `literal`) matches `low`, at most
    `cap`; the literal's own count first, as a cheap filter."""
    found = low.count(literal)
    if found == 0:
        return 0
    if found == 1:
        return 1 if pattern.search(low) is not None else 0
    count = 0
    for _ in pattern.finditer(low):
        count += 1
        if count >= cap:
            break
    return count
