"""Splitting long turns into overlapping passages, so that rankers see focused text.

A passage is a character slice of its turn (`Passage.start`/`end`), never rewritten text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from smartsearch_mcp.types import Passage, Turn

_WORD_RE = re.compile(r"\S+")
_CLOSERS = "\"'”’)]"  # closing quotes and brackets that may follow a sentence's end
# A unit ends after a sentence end (with closing quotes/brackets) or at a line break (only
# where a match ends counts; each branch starting with a fixed character set makes the
# scan 2.6x faster than a look-behind and a leading \s*, with the same ends).
_BOUNDARY_RE = re.compile(rf"[.!?…][{re.escape(_CLOSERS)}]*\s+|\n\s*")
_HAS_WORD_RE = re.compile(r"\w")


def split_into_passages(turn: Turn, max_words: int, overlap_words: int) -> list[Passage]:
    """The passages of `turn`: the whole turn when it has at most `max_words` words
    (whitespace-separated), else windows of at most `max_words` words.

    Windows are built from whole sentences and lines, packed greedily; a sentence longer
    than a window is split between words. Each window after the first starts with up to
    `overlap_words` words of whole units from the end of the previous one. Together the
    passages cover the whole text, in order; each is an exact slice (`turn.text[start:end]`),
    trailing whitespace included. Deterministic.

    Raises ValueError unless 0 <= overlap_words < max_words.
    """
    if max_words < 1 or not 0 <= overlap_words < max_words:
        raise ValueError(
            f"need 0 <= overlap_words < max_words, got max_words={max_words}, "
            f"overlap_words={overlap_words}"
        )
    text = turn.text
    if not may_split(text, max_words) or _word_count(text) <= max_words:
        return [Passage(turn=turn, start=0, end=len(text))]
    units = _units(text, max_words)
    return [
        Passage(turn=turn, start=s, end=e) for s, e in _windows(units, max_words, overlap_words)
    ]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the sentences and lines tiling `text` (the units passages are packed
    from; a sentence is never split between words here)."""
    size = len(text)
    cuts = [0, *(end for m in _BOUNDARY_RE.finditer(text) if 0 < (end := m.end()) < size)]
    cuts.append(size)
    return [(start, end) for start, end in itertools.pairwise(cuts) if end > start]


def asks_only(text: str) -> bool:
    """Whether every sentence of `text` that has a word in it is a question ("Should the CSV
    export go behind a feature flag?", "Casa Lupo?? 🙏"); False for a text without words."""
    # The last sentence with a word must be a question: checked first, so that a long answer
    # is not split into sentences (0.2 ms for a BEAM answer). The last word character is the
    # first of the reversed text (a regex, not a loop: one BEAM answer ends in 51,000
    # characters of "/" and line breaks).
    found = _HAS_WORD_RE.search(text[::-1])
    if found is None or "?" not in text[len(text) - found.start() :]:
        return False
    sentences = [text[start:end].rstrip() for start, end in sentence_spans(text)]
    worded = [s.rstrip(_CLOSERS) for s in sentences if _HAS_WORD_RE.search(s)]
    return bool(worded) and all(s.endswith("?") for s in worded)


# Words that open a question in English when typed without its question mark ("how do I run
# the linter with autofix again"). Not an auxiliary: "can you keep in mind that my sister's
# wedding is June 8" asks nothing; it says.
_WH_WORDS = frozenset(
    [
        "what",
        "what's",
        "whats",
        "which",
        "how",
        "how's",
        "why",
        "where",
        "where's",
        "when",
        "who",
        "who's",
        "whom",
        "whose",
    ]
)
_OPENING_RE = re.compile(r"[A-Za-z][A-Za-z']*")


def asks_question(text: str) -> bool:
    """Whether `text` only asks: every sentence with a word in it is a question
    (`asks_only`), or it is one sentence opening with a wh-word ("how do I run the linter
    with autofix again"), as people type questions without the question mark. A turn
    that says something before it asks ("I'm on the 3 pm shift now. Any tips?") says it."""
    if asks_only(text):
        return True
    opening = _OPENING_RE.search(text[:80])
    if opening is None or opening.group().lower() not in _WH_WORDS:
        return False
    return (
        sum(1 for start, end in sentence_spans(text) if _HAS_WORD_RE.search(text[start:end])) == 1
    )


def may_split(text: str, max_words: int) -> bool:
    """False when `text` is too short to hold more than `max_words` words (a word takes at
    least one character and a separator), so it is one passage without counting."""
    return len(text) >= 2 * max_words


def _word_count(text: str) -> int:
    """Whitespace-separated words: the matches of `_WORD_RE`, counted by `str.split` (the
    same for every character, and several times faster)."""
    return len(text.split())


def _units(text: str, max_words: int) -> list[tuple[int, int, int]]:
    """(start, end, words) of sentence/line units tiling `text`; a unit longer than
    `max_words` becomes one unit per word."""
    size = len(text)
    cuts = [0, *(end for m in _BOUNDARY_RE.finditer(text) if 0 < (end := m.end()) < size)]
    cuts.append(size)
    units: list[tuple[int, int, int]] = []
    for start, end in itertools.pairwise(cuts):
        if end <= start:
            continue
        count = _word_count(text[start:end])
        if count <= max_words:
            units.append((start, end, count))
            continue
        words = [m.start() for m in _WORD_RE.finditer(text, start, end)]
        bounds = [start, *words[1:], end]
        units.extend((a, b, 1) for a, b in itertools.pairwise(bounds))
    return units


def _windows(
    units: Sequence[tuple[int, int, int]], max_words: int, overlap_words: int
) -> list[tuple[int, int]]:
    windows: list[tuple[int, int]] = []
    first = 0
    while first < len(units):
        last, words = first, 0
        while last < len(units) and (last == first or words + units[last][2] <= max_words):
            words += units[last][2]
            last += 1
        windows.append((units[first][0], units[last - 1][1]))
        if last >= len(units):
            break
        # The next window starts with trailing units of this one that fit the overlap and
        # leave room for the next new unit (so every window adds text).
        room = min(overlap_words, max_words - units[last][2])
        following, overlap = last, 0
        while following - 1 > first and overlap + units[following - 1][2] <= room:
            overlap += units[following - 1][2]
            following -= 1
        first = following
    return windows
