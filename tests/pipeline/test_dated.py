"""Which passages a question's time range holds (`DateWindow`), and the date channel: the
passages inside, best by lexical score, dense similarity, then the latest, filling a quota
and taking no part in fusion."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
from factories import make_passage
from hypothesis import given, settings
from hypothesis import strategies as st

from smartsearch_mcp.dates import DateRange
from smartsearch_mcp.pipeline.dated import (
    Dated,
    DateWindow,
    _may_be_inside,
    best_dated,
    date_channel,
    inside_window,
    text_date_bounds,
    windows_of,
)
from smartsearch_mcp.pipeline.retrieve import select_candidates
from smartsearch_mcp.pipeline.term_counts import WordIndex

LAST_WEEK = DateRange(datetime(2026, 11, 23), datetime(2026, 11, 30), "last week")
FEBRUARY = DateRange(datetime(2026, 2, 1), datetime(2026, 3, 1), "February", recurs=True)


def test_a_passage_said_in_the_range_or_naming_a_date_in_it_is_inside() -> None:
    window = DateWindow.of(LAST_WEEK)
    said = make_passage(1, "Pilchard is eating again.", timestamp="2026-11-25T20:30:00Z")
    named = make_passage(2, "The vet visit is on November 24th.", timestamp="2026-11-02T09:00")
    relative = make_passage(3, "We went kayaking last week, so fun!", timestamp="2026-12-02T10:00")
    before = make_passage(4, "Pilchard is off his food.", timestamp="2026-11-05T08:40:00Z")
    after = make_passage(5, "The vet said it healed.", timestamp="2026-11-30T09:00:00Z")
    assert [window.holds(p) for p in (said, named, relative, before, after)] == [
        True,
        True,
        True,
        False,
        False,
    ]


def test_relative_dates_are_read_only_in_turns_said_near_the_range() -> None:
    # "3 months ago" said in February names November, but a turn said that far from a
    # week is read for absolute dates only (parsing every turn of a large scope costs
    # ~100 µs each); a month holds relative dates said a month away, a year a year away
    far = make_passage(1, "We moved here 3 months ago", timestamp="2027-02-25T10:00")
    absolute = make_passage(2, "Back on 25 November 2026 we moved.", timestamp="2029-01-01T10:00")
    assert not DateWindow.of(LAST_WEEK).holds(far)
    assert DateWindow.of(LAST_WEEK).holds(absolute)
    year = DateRange(datetime(2026, 1, 1), datetime(2027, 1, 1), "2026")
    assert DateWindow.of(year).holds(
        make_passage(3, "Last year we went to Rome.", timestamp="2027-10-02T10:00")
    )
    # a season or a month is named "last summer" / "last May" most of a year later
    summer = DateRange(datetime(2022, 6, 1), datetime(2022, 9, 1), "summer 2022")
    riga = make_passage(4, "A photo from last summer in Riga.", timestamp="2023-02-04T09:48")
    assert DateWindow.of(summer).holds(riga)


WORDS = st.sampled_from(
    ["on", "in", "last", "week", "yesterday", "February", "Feb", "12", "2027", "November",
     "December", "Dec", "4th", "1", "summer", "June", "year",
     "the", "trip", "3rd", "ago", "2", "days", "May", "this", "month", "2026-11-25", "summer",
     "tomorrow", "next", "two", "weeks"]
)  # fmt: skip
THIS_WEEK = DateRange(datetime(2026, 11, 30), datetime(2026, 12, 7), "this week")
SUMMER = DateRange(datetime(2026, 6, 1), datetime(2026, 9, 1), "summer 2026")
SPANS = (
    LAST_WEEK,
    THIS_WEEK,
    FEBRUARY,
    SUMMER,
    DateRange(datetime(2027, 2, 1), datetime(2027, 3, 1)),
)


RELATIVE = ("yesterday", "last", "ago", "this", "past", "tomorrow", "next", "in")


@settings(max_examples=300)
@given(
    text=st.lists(WORDS, max_size=8).map(" ".join),
    span=st.sampled_from(SPANS),
    days=st.integers(min_value=-800, max_value=800),
)
def test_the_cheap_test_agrees_with_reading_every_date(
    text: str, span: DateRange, days: int
) -> None:
    """Near the range every date is read; farther away only absolute ones."""
    stamp = (span.start + timedelta(days=days, hours=13)).isoformat()
    window = DateWindow.of(span)
    for said in (stamp, None):
        at = said or ""
        near = not at or window.long_from <= at < window.long_to
        if not near and any(word in text.split() for word in RELATIVE):
            continue
        full = window.start <= at < window.end or any(
            a < window.end and b > window.start for a, b in text_date_bounds(text, at)
        )
        assert window.holds(make_passage(1, text, timestamp=said)) == full, (text, said, span)


def test_dates_ahead_of_a_turn_said_before_the_range_are_read() -> None:
    # said on Friday 20 November, each of these names a day of the week after
    window = DateWindow.of(LAST_WEEK)
    for i, text in enumerate(
        ("The movers come in 3 days.", "We fly in four days!", "The vet is next Tuesday.")
    ):
        assert window.holds(make_passage(i, text, timestamp="2026-11-20T13:00")), text
    assert not window.holds(make_passage(9, "The vet is tomorrow.", timestamp="2026-11-20T13:00"))
    assert window.holds(make_passage(9, "The vet is tomorrow.", timestamp="2026-11-22T13:00"))


def test_a_week_across_two_months_is_named_by_either() -> None:
    said = make_passage(1, "The movers come on December 4th.", timestamp="2027-01-20T10:00")
    assert DateWindow.of(THIS_WEEK).holds(said)
    assert not DateWindow.of(LAST_WEEK).holds(said)


def test_a_month_without_a_year_is_tried_again_a_year_later() -> None:
    said = make_passage(1, "Booked the ferry for February 3 to 9.", timestamp="2026-11-25T20:30")
    other = make_passage(2, "Pilchard is eating again.", timestamp="2026-11-25T20:32")
    assert [w.span.start.year for w in windows_of(FEBRUARY)] == [2026, 2027]
    lowered = [said.text.lower(), other.text.lower()]
    dated = inside_window([said, other], lowered, FEBRUARY)
    assert dated is not None and dated.inside == [0]
    assert dated.window.span.start == datetime(2027, 2, 1)
    assert inside_window([other], lowered[1:], FEBRUARY) is None
    assert inside_window([said], lowered[:1], None) is None


def test_the_best_inside_are_by_words_then_meaning_then_the_latest() -> None:
    passages = [
        make_passage(i, f"turn {i}", timestamp=f"2026-11-2{i}T10:00:00Z") for i in range(1, 6)
    ]
    dated = Dated(DateWindow.of(LAST_WEEK), inside=[0, 1, 2, 3, 4])
    lexical = [0.0, 2.0, 0.0, 0.0, 0.0]
    dense = np.array([0.1, 0.0, 0.9, 0.1, np.nan])
    assert best_dated(dated, passages, lexical, dense, 4) == [1, 2, 3, 0]
    assert best_dated(dated, passages, lexical, None, 3) == [1, 4, 3]  # then the latest
    assert best_dated(dated, passages, lexical, None, 0) == []


def test_the_date_channel_fills_its_quota_and_adds_nothing_to_the_fusion() -> None:
    lexical = np.array([3.0, 0.0, 0.0, 1.0, 0.0, 0.0])
    date = date_channel(6, inside=[1, 2, 4], best=[4, 2])
    assert date.tolist() == [0.0, 1.0, 2.0, 0.0, 3.0, 0.0]
    channels = {"lexical": lexical, "date": date}
    picked = select_candidates(channels, {"lexical": 1, "date": 2}, 6, 60)
    assert picked == [0, 4, 2, 3]  # the lexical quota, the date quota, then only matches
    # the date channel's places are kept even when the other quotas would fill everything
    assert select_candidates(channels, {"lexical": 6, "date": 2}, 3, 60) == [0, 4, 2]
    assert select_candidates(channels, {"lexical": 1, "date": 0}, 6, 60) == [0, 3]


@settings(max_examples=200)
@given(
    said=st.lists(
        st.tuples(
            st.lists(WORDS, max_size=6).map(" ".join),
            # days from the range's start: near it (where relative dates are read) or far
            st.one_of(st.none(), st.integers(-900, 900), st.integers(-15, 15)),
        ),
        max_size=12,
    ),
    span=st.sampled_from(SPANS),
)
def test_the_word_index_reads_only_passages_that_can_be_inside_and_finds_the_same(
    said: list[tuple[str, int | None]], span: DateRange
) -> None:
    passages = [
        make_passage(
            i + 1,
            text,
            timestamp=None if days is None else (span.start + timedelta(days=days)).isoformat(),
        )
        for i, (text, days) in enumerate(said)
    ]
    lowered = [p.text.lower() for p in passages]
    everything = inside_window(passages, lowered, span)
    indexed = inside_window(passages, lowered, span, WordIndex(lowered))
    assert (everything is None) == (indexed is None)
    if everything is not None and indexed is not None:
        assert (everything.window, everything.inside) == (indexed.window, indexed.inside)


def test_with_the_word_index_a_passage_far_from_the_range_naming_nothing_is_not_read() -> None:
    far = make_passage(1, "lunch was great", timestamp="2020-01-01T12:00")
    named = make_passage(2, "the vet on November 24th", timestamp="2020-01-01T12:00")
    window = DateWindow.of(LAST_WEEK)
    lowered = [far.text.lower(), named.text.lower()]
    assert _may_be_inside(window, [far, named], WordIndex(lowered)) == [1]
