"""How often grep's term patterns match many texts, each pattern run once over the texts
joined together instead of once per text.

Grep mode scores every passage of a scope for every query term (and again for the feedback
terms): calling a pattern on 100,000 texts one by one costs a Python call per text and term,
while one `finditer` over the joined texts costs one call per match. The counts are exactly
those of matching each text alone: texts are joined by `SEPARATOR`, which no match can cross
(see `count_matches`), and a pattern that could contain it is matched text by text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

# Four NUL characters between two texts: more non-word characters than the gap a phrase
# allows between its words (`lexical._PHRASE_GAP`, at most three), and seen by a look-behind
# or look-ahead as no word character, like the start or end of a text.
SEPARATOR = "\x00" * 4
CHUNK_TEXTS = 4096  # texts joined for one scan: bounds the copy a scan makes
MAX_CAP = 255  # counts are kept as bytes


class TermCounts:
    """How often each pattern matches each of `texts` (lowercased before matching, as
    `TermMatcher.score` lowercases, unless they are `lowered` already), counted once per
    pattern and kept: the idf of the query's terms and their scores read the same counts."""

    def __init__(self, texts: Sequence[str], cap: int, lowered: bool = False) -> None:
        self.texts = texts
        self.cap = cap
        self.lowered = lowered
        self._rows: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.texts)

    def rows(self, patterns: Sequence[tuple[str, re.Pattern[str]]]) -> list[np.ndarray]:
        """One row per (literal, pattern): its number of matches in each text, capped at
        `cap` (the patterns not counted yet are counted in one pass over the texts)."""
        todo = {p.pattern: (lit, p) for lit, p in patterns if p.pattern not in self._rows}
        if todo:
            counted = count_matches(list(todo.values()), self.texts, self.cap, self.lowered)
            self._rows.update(zip(todo, counted, strict=True))
        return [self._rows[p.pattern] for _, p in patterns]

    def documents(self, patterns: Sequence[tuple[str, re.Pattern[str]]]) -> list[int]:
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
