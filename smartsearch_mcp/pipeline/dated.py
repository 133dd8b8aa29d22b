"""Date-true retrieval: which passages a question's time range holds, and the date channel.

A passage is inside a range when its turn was said in it, or its text names a date that
overlaps it ("on December 3rd", "3 Dec 2026", "the February concert", "yesterday" — read
against the turn's own time). `DateWindow` decides that for one range, cheaply enough to ask
of every passage of a scope: a text is parsed for dates only when it can name one in the
range (a month word of a month the range overlaps, or one of its years; relative words
only in turns said near the range, see `RELATIVE_DAYS` — "last week" said two years later
is not read).

The date channel (`date_channel`) makes passages inside the range candidates whatever their
words: "Where are we skiing in January?" is answered by "booked a cabin near Lillehammer
for January 9 to 16", which shares no word with it. Its best passages — by lexical score, then
dense similarity, then the latest said — take `retrieval.date_candidates` places; it takes
no part in the fusion that fills the other places (it orders passages by when, not by what).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np

from smartsearch_mcp.dates import (
    DateRange,
    comparable,
    mentioned_ranges,
    month_words,
    next_occurrence,
    parse_timestamp,
)
from smartsearch_mcp.pipeline.term_counts import WORD, WordIndex
from smartsearch_mcp.types import InputError, Passage

DATE_BONUS = 1.0
# Relative dates ("yesterday", "last week", "last summer") are read in turns said at most
# RELATIVE_DAYS before a range starts or after it ends ("last Saturday", "2 weeks ago"),
# and, for a range longer than a week, in turns said at most RELATIVE_LONG_DAYS (or the
# range's own length) around it that name a long unit ("last summer" said in February,
# "last May" in April, "last year" within the next). Absolute dates are read in any turn.
RELATIVE_DAYS = 31
RELATIVE_LONG_DAYS = 366
SHORT_RANGE = timedelta(days=8)
# Only texts holding a digit or a word of the date vocabulary are parsed for dates (matched
# in lowercase text: with IGNORECASE the alternation costs 30 µs per chat turn, not 5).
_MAY_HOLD_DATE_RE = re.compile(
    r"\d|day|tomorrow|tonight|next|last|past|previous|ago|this|week|month|year|season|spring"
    r"|summer|fall|autumn|winter|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue"
    r"|wed|thu|fri|sat|sun"
)
# What every relative date says ("yesterday", "last week", "3 days ago", "this morning",
# "the past month", "the current year", and ahead: "tomorrow", "next week", "in 2 days",
# "in a couple of weeks"; see `dates._TIME_PATTERNS`).
_RELATIVE_RE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|last|past|previous|ago|this|current|next"
    r"|in\s+(?:\S+\s+){1,3}?(?:day|week|month|year)s?)\b"
)
# ...and what one that reaches more than a month back or ahead says besides ("last summer",
# "last May", "6 weeks ago", "this year"): farther turns are read only when they hold it.
_LONG_UNIT_RE = re.compile(
    r"\b(?:weeks|months?|years?|spring|summer|fall|autumn|winter|january|february|march|april"
    r"|may|june|july|august|september|october|november|december)\b"
)


def range_bounds(time_range: DateRange) -> tuple[str, str]:
    """A range's start and (exclusive) end as strings comparable to stored timestamps."""
    return comparable(time_range.start)[:19], comparable(time_range.end)[:19]


@functools.lru_cache(maxsize=65536)
def text_date_bounds(text: str, stamp: str) -> tuple[tuple[str, str], ...]:
    """The dates `text` mentions, as comparable (start, end) strings, read against `stamp`
    (the turn's time; now when it has none). Cached: turn texts never change, and a date
    question reads the same candidates again."""
    if not _MAY_HOLD_DATE_RE.search(text.lower()):
        return ()
    try:
        reference = parse_timestamp(stamp) if stamp else datetime.now()
    except InputError:
        reference = datetime.now()
    if reference.tzinfo is not None:
        reference = reference.replace(tzinfo=None)  # stored aware times are UTC
    return tuple(
        (comparable(found.start)[:19], comparable(found.end)[:19])
        for found in mentioned_ranges(text, reference)
    )


@dataclass(frozen=True)
class DateWindow:
    """One time range and the test of whether a passage belongs to it (`holds`)."""

    span: DateRange
    start: str  # comparable bounds (see `range_bounds`)
    end: str
    relative_from: str  # turns said in [relative_from, relative_to) are read for relative dates
    relative_to: str
    long_from: str  # ...and those said in [long_from, long_to) for long relative dates
    long_to: str
    words: tuple[str, ...]  # what an absolute date in the range says (see `_range_words`)
    names: re.Pattern[str] = field(repr=False)  # any of `words`, as a whole word

    @classmethod
    def of(cls, span: DateRange) -> DateWindow:
        start, end = range_bounds(span)
        length = span.end - span.start
        margin = timedelta(days=RELATIVE_DAYS)
        far = margin if length <= SHORT_RANGE else max(timedelta(RELATIVE_LONG_DAYS), length)
        first = span.start.replace(tzinfo=None)
        words = _range_words(first.year, first.month, first.day, span.end - span.start)
        return cls(
            span=span,
            start=start,
            end=end,
            relative_from=comparable(span.start - margin)[:19],
            relative_to=comparable(span.end + margin)[:19],
            long_from=comparable(span.start - far)[:19],
            long_to=comparable(span.end + far)[:19],
            words=words,
            names=_words_pattern(words),
        )

    def holds(self, passage: Passage, lowered: str | None = None) -> bool:
        """Whether `passage` was said in the range or names a date overlapping it
        (`lowered`: its lowercased text or ranking text, when the caller has it)."""
        stamp = (passage.turn.timestamp or "")[:19]
        if stamp and self.start <= stamp < self.end:
            return True
        text = passage.text
        low = lowered if lowered is not None else text.lower()
        names = any(word in low for word in self.words) and self.names.search(low) is not None
        if not names and not self._may_say_relatively(stamp, low):
            return False
        return any(
            first < self.end and last > self.start for first, last in text_date_bounds(text, stamp)
        )

    def _may_say_relatively(self, stamp: str, low: str) -> bool:
        """Whether a turn said at `stamp` with lowercase text `low` may name the range by
        a relative date (see `RELATIVE_DAYS`)."""
        if stamp and not self.long_from <= stamp < self.long_to:
            return False
        if _RELATIVE_RE.search(low) is None:
            return False
        near = not stamp or self.relative_from <= stamp < self.relative_to
        return near or _LONG_UNIT_RE.search(low) is not None


@functools.lru_cache(maxsize=256)
def _range_words(year: int, month: int, day: int, length: timedelta) -> tuple[str, ...]:
    """The month words (full and short) of the months a range starting on `year`-`month`-
    `day` and lasting `length` overlaps, and its years: what an absolute date in it must
    say ("February 9", "Feb 2027", "2027-02-09", "in 2027")."""
    months: set[int] = set()
    years: set[int] = set()
    moment = datetime(year, month, 1)
    last = datetime(year, month, day) + length - timedelta(seconds=1)
    while moment <= last and len(months) < 12:
        months.add(moment.month)
        years.add(moment.year)
        moment = datetime(moment.year + moment.month // 12, moment.month % 12 + 1, 1)
    years.update(range(moment.year, last.year + 1))
    return (*month_words(months), *(str(y) for y in sorted(years)))


@functools.lru_cache(maxsize=256)
def _words_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    ordered = sorted(words, key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in ordered) + r")\b")


def add_date_bonus(
    scores: list[float], passages: Sequence[Passage], time_range: DateRange | None
) -> list[float]:
    """Raise the score of matching passages that fall within the time range the question
    names: said then, or mentioning a date in it (see `DateWindow.holds`)."""
    if time_range is None:
        return scores
    window = DateWindow.of(time_range)
    out = list(scores)
    for i, passage in enumerate(passages):
        if out[i] > 0 and window.holds(passage):
            out[i] += DATE_BONUS
    return out


def windows_of(time_range: DateRange | None) -> list[DateWindow]:
    """The windows a question's range is read as, in order of preference: the range, then
    for a day or month named without a year its next occurrence ("Where are we skiing in
    January?" asked in November: last January may hold nothing, the coming one a plan)."""
    if time_range is None:
        return []
    upcoming = next_occurrence(time_range)
    return [DateWindow.of(time_range), *([DateWindow.of(upcoming)] if upcoming else [])]


@dataclass(frozen=True)
class Dated:
    """The passages of a corpus inside the question's range (`inside`, corpus indices in
    corpus order), the window they are inside, and — when already chosen (a streamed scope)
    — the best of them for the date channel, best first."""

    window: DateWindow
    inside: list[int]
    best: list[int] | None = None


def inside_window(
    passages: Sequence[Passage],
    lowered: Sequence[str],
    time_range: DateRange | None,
    words: WordIndex | None = None,
) -> Dated | None:
    """The passages inside the first window of `time_range` (`windows_of`) that holds any,
    or None when none does (or there is no range). With the corpus's word index (`words`)
    only the passages that can be inside are read: those said within the window's reach of
    relative dates (or at no time) and those holding a word an absolute date in it says —
    at a million chat turns, 14 s of reading dates for a year's range. CPU-bound: run in a
    worker thread."""
    for window in windows_of(time_range):
        rows: Iterable[int] = range(len(passages))
        if words is not None:
            rows = _may_be_inside(window, passages, words)
        inside = [i for i in rows if window.holds(passages[i], lowered[i])]
        if inside:
            return Dated(window, inside)
    return None


def chosen_inside(
    passages: Sequence[Passage],
    lowered: Sequence[str],
    chosen: Sequence[int],
    time_range: DateRange | None,
) -> list[int]:
    """The chosen passages (indices into `passages`) inside `time_range`, in the first
    window that holds any of them (`inside_window`), for a question naming nothing but its
    time: passages said at other times match nothing it asks, however alike the bi-encoder
    finds them. None inside: none (recall then says nothing was said in or names that time)."""
    dated = inside_window([passages[i] for i in chosen], [lowered[i] for i in chosen], time_range)
    return [chosen[k] for k in dated.inside] if dated is not None else []


def _may_be_inside(window: DateWindow, passages: Sequence[Passage], words: WordIndex) -> list[int]:
    """The passages `window.holds` may accept, ascending: said in the window, or where a
    relative date may name it (`_may_say_relatively`: near it, or at no time), or holding
    one of its words as a whole word (what `names` matches)."""
    if not all(WORD.fullmatch(word) for word in window.words):
        return list(range(len(passages)))  # a word the index does not hold whole
    low, high = min(window.start, window.long_from), max(window.end, window.long_to)
    near = {
        i
        for i, passage in enumerate(passages)
        if not (stamp := (passage.turn.timestamp or "")[:19]) or low <= stamp < high
    }
    named = words.holding_any([word.lower() for word in window.words])
    return sorted(near.union(named.tolist()))


def date_order_key(
    lexical: float, dense: float, passage: Passage, position: int
) -> tuple[float, float, str, int]:
    """How the date channel orders the passages inside the range (the larger key first):
    lexical score, then dense similarity (0 without; NaN: not embedded), then the latest
    said, then scope order."""
    similarity = dense if dense == dense else -1.0  # NaN: not embedded yet
    return (lexical, similarity, passage.turn.timestamp or "", -position)


def best_dated(
    dated: Dated,
    passages: Sequence[Passage],
    lexical: Sequence[float],
    dense: np.ndarray | None,
    quota: int,
) -> list[int]:
    """The `quota` best passages inside the range, best first (`date_order_key`)."""
    if quota <= 0:
        return []

    def key(i: int) -> tuple[float, float, str, int]:
        return date_order_key(
            float(lexical[i]), float(dense[i]) if dense is not None else 0.0, passages[i], i
        )

    return sorted(dated.inside, key=key, reverse=True)[:quota]


def date_channel(size: int, inside: Sequence[int], best: Sequence[int]) -> np.ndarray:
    """The date channel's score of each of `size` passages: 1 inside the range, more for its
    `best` (in their order), 0 outside. Only the order of the best matters (the channel
    fills its quota and takes no part in fusion); inside passages get a positive score so
    that candidates say they came through it too."""
    out = np.zeros(size)
    if len(inside):
        out[np.asarray(inside, dtype=np.int64)] = 1.0
    for rank, i in enumerate(best):
        out[i] = 1.0 + len(best) - rank
    return out
