"""Query time expressions: `find_time_range` read string for string."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.dates import (
    DateRange,
    find_time_range,
    mentioned_ranges,
    next_occurrence,
    normalize_timestamp,
)
from smartsearch_mcp.types import InputError

# A Wednesday afternoon.
REFERENCE = datetime(2023, 6, 14, 15, 30)


def day(year: int, month: int, dom: int) -> datetime:
    return datetime(year, month, dom)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("What did I do on 8 May 2023?", DateRange(day(2023, 5, 8), day(2023, 5, 9), "8 May 2023")),
        ("the 8th of May, 2023", DateRange(day(2023, 5, 8), day(2023, 5, 9), "8th of May, 2023")),
        ("May 8th, 2023", DateRange(day(2023, 5, 8), day(2023, 5, 9), "May 8th, 2023")),
        ("on Sept. 3 2021", DateRange(day(2021, 9, 3), day(2021, 9, 4), "Sept. 3 2021")),
        ("2023-05-08", DateRange(day(2023, 5, 8), day(2023, 5, 9), "2023-05-08")),
        ("2023/5/8", DateRange(day(2023, 5, 8), day(2023, 5, 9), "2023/5/8")),
        ("in May 2023", DateRange(day(2023, 5, 1), day(2023, 6, 1), "May 2023")),
        ("during May of 2021", DateRange(day(2021, 5, 1), day(2021, 6, 1), "May of 2021")),
        ("december 2022", DateRange(day(2022, 12, 1), day(2023, 1, 1), "december 2022")),
        ("in 2022", DateRange(day(2022, 1, 1), day(2023, 1, 1), "2022")),
        ("summer of 2022", DateRange(day(2022, 6, 1), day(2022, 9, 1), "summer of 2022")),
        ("winter 2022", DateRange(day(2022, 12, 1), day(2023, 3, 1), "winter 2022")),
        ("on May 8th", DateRange(day(2023, 5, 8), day(2023, 5, 9), "May 8th")),
        ("on 20 June", DateRange(day(2022, 6, 20), day(2022, 6, 21), "20 June")),
        ("in March", DateRange(day(2023, 3, 1), day(2023, 4, 1), "March")),
        ("in September", DateRange(day(2022, 9, 1), day(2022, 10, 1), "September")),
        ("yesterday", DateRange(day(2023, 6, 13), day(2023, 6, 14), "yesterday")),
        ("last night", DateRange(day(2023, 6, 13), day(2023, 6, 14), "last night")),
        (
            "the day before yesterday",
            DateRange(day(2023, 6, 12), day(2023, 6, 13), "the day before yesterday"),
        ),
        ("today", DateRange(day(2023, 6, 14), day(2023, 6, 15), "today")),
        ("last week", DateRange(day(2023, 6, 5), day(2023, 6, 12), "last week")),
        ("this week", DateRange(day(2023, 6, 12), day(2023, 6, 19), "this week")),
        ("the past week", DateRange(day(2023, 6, 8), day(2023, 6, 15), "the past week")),
        ("last month", DateRange(day(2023, 5, 1), day(2023, 6, 1), "last month")),
        ("this month", DateRange(day(2023, 6, 1), day(2023, 7, 1), "this month")),
        ("last year", DateRange(day(2022, 1, 1), day(2023, 1, 1), "last year")),
        ("this year", DateRange(day(2023, 1, 1), day(2024, 1, 1), "this year")),
        ("3 days ago", DateRange(day(2023, 6, 11), day(2023, 6, 12), "3 days ago")),
        ("a day ago", DateRange(day(2023, 6, 13), day(2023, 6, 14), "a day ago")),
        ("two weeks ago", DateRange(day(2023, 5, 29), day(2023, 6, 5), "two weeks ago")),
        ("a few months ago", DateRange(day(2023, 3, 1), day(2023, 4, 1), "a few months ago")),
        (
            "a couple of years ago",
            DateRange(day(2021, 1, 1), day(2022, 1, 1), "a couple of years ago"),
        ),
        ("the past 3 days", DateRange(day(2023, 6, 12), day(2023, 6, 15), "the past 3 days")),
        (
            "the last two months",
            DateRange(day(2023, 4, 15), day(2023, 6, 15), "the last two months"),
        ),
        ("last Saturday", DateRange(day(2023, 6, 10), day(2023, 6, 11), "last Saturday")),
        ("last Wednesday", DateRange(day(2023, 6, 7), day(2023, 6, 8), "last Wednesday")),
        ("last weekend", DateRange(day(2023, 6, 10), day(2023, 6, 12), "last weekend")),
        ("last summer", DateRange(day(2022, 6, 1), day(2022, 9, 1), "last summer")),
        ("last May", DateRange(day(2023, 5, 1), day(2023, 6, 1), "last May")),
        ("last July", DateRange(day(2022, 7, 1), day(2022, 8, 1), "last July")),
        ("tomorrow", DateRange(day(2023, 6, 15), day(2023, 6, 16), "tomorrow")),
        (
            "the day after tomorrow",
            DateRange(day(2023, 6, 16), day(2023, 6, 17), "the day after tomorrow"),
        ),
        ("in 3 days", DateRange(day(2023, 6, 17), day(2023, 6, 18), "in 3 days")),
        ("in two weeks", DateRange(day(2023, 6, 26), day(2023, 7, 3), "in two weeks")),
        ("in a month's time", DateRange(day(2023, 7, 1), day(2023, 8, 1), "in a month's time")),
        ("in a year", DateRange(day(2024, 1, 1), day(2025, 1, 1), "in a year")),
        ("next week", DateRange(day(2023, 6, 19), day(2023, 6, 26), "next week")),
        ("next month", DateRange(day(2023, 7, 1), day(2023, 8, 1), "next month")),
        ("next year", DateRange(day(2024, 1, 1), day(2025, 1, 1), "next year")),
        ("next Friday", DateRange(day(2023, 6, 16), day(2023, 6, 17), "next Friday")),
        ("next Wednesday", DateRange(day(2023, 6, 21), day(2023, 6, 22), "next Wednesday")),
        ("next weekend", DateRange(day(2023, 6, 17), day(2023, 6, 19), "next weekend")),
        ("next May", DateRange(day(2024, 5, 1), day(2024, 6, 1), "next May")),
        ("this weekend", DateRange(day(2023, 6, 17), day(2023, 6, 19), "this weekend")),
        # chat spellings
        ("see u tmrw", DateRange(day(2023, 6, 15), day(2023, 6, 16), "tmrw")),
        ("yday", DateRange(day(2023, 6, 13), day(2023, 6, 14), "yday")),
        ("2nite", DateRange(day(2023, 6, 14), day(2023, 6, 15), "2nite")),
        ("last wk", DateRange(day(2023, 6, 5), day(2023, 6, 12), "last wk")),
        ("this wknd", DateRange(day(2023, 6, 17), day(2023, 6, 19), "this wknd")),
        ("2 yrs ago", DateRange(day(2021, 1, 1), day(2022, 1, 1), "2 yrs ago")),
        ("next September", DateRange(day(2023, 9, 1), day(2023, 10, 1), "next September")),
        # a day of the month alone: this month's when it has come, else the month before's
        ("what happened on the 2nd?", DateRange(day(2023, 6, 2), day(2023, 6, 3), "on the 2nd")),
        ("on the 21st", DateRange(day(2023, 5, 21), day(2023, 5, 22), "on the 21st")),
        ("the 31st, I think", DateRange(day(2023, 5, 31), day(2023, 6, 1), "the 31st")),
        ("on the 14th at noon", DateRange(day(2023, 6, 14), day(2023, 6, 15), "on the 14th")),
    ],
)
def test_find_time_range_reads_each_expression(text: str, expected: DateRange) -> None:
    assert find_time_range(text, REFERENCE) == expected


@pytest.mark.parametrize(
    "text",
    [
        "What did Caroline paint?",
        "I may go there",
        "we march on",
        "room 2023 is free",
        "31 February",
        "99999 years ago",
        "the 2nd floor",
        "in the 21st century",
        "the 3rd, 4th and 5th Republics",
        "on the 21",
        "",
    ],
)
def test_find_time_range_finds_nothing_without_a_date(text: str) -> None:
    assert find_time_range(text, REFERENCE) is None


def test_a_day_of_the_month_alone_in_a_turn_dates_nothing() -> None:
    # said on the 14th, "on the 21st" is a plan as often as a memory: which month is not known
    assert mentioned_ranges("see you on the 21st", REFERENCE) == []
    assert find_time_range("see you on the 21st", REFERENCE) is not None


def test_a_weekend_day_reads_next_weekend_as_the_one_after_it() -> None:
    saturday = datetime(2023, 6, 17, 10, 0)
    assert find_time_range("next weekend", saturday) == DateRange(
        day(2023, 6, 24), day(2023, 6, 26), "next weekend"
    )


def test_this_weekend_on_a_weekend_day_is_the_one_under_way() -> None:
    sunday = datetime(2023, 6, 18, 10, 0)
    assert find_time_range("this weekend", sunday) == DateRange(
        day(2023, 6, 17), day(2023, 6, 19), "this weekend"
    )


def test_a_chat_message_saying_tmrw_means_the_day_after_it_was_sent() -> None:
    spans = mentioned_ranges("dinner at nopalito tmrw 7pm!!", datetime(2023, 12, 2, 18, 0))
    assert [(s.expression, s.start, s.end) for s in spans] == [
        ("tmrw", day(2023, 12, 3), day(2023, 12, 4))
    ]


def test_a_turn_saying_tomorrow_means_the_day_after_it_was_said() -> None:
    said = datetime(2023, 12, 2, 18, 0)
    spans = mentioned_ranges("Flying to Porto tomorrow, back next Friday!", said)
    assert [s.expression for s in spans] == ["tomorrow", "next Friday"]
    assert (spans[0].start, spans[0].end) == (day(2023, 12, 3), day(2023, 12, 4))
    assert spans[1].start == day(2023, 12, 8)


def test_the_leftmost_expression_wins() -> None:
    found = find_time_range("last week, not in 2019", REFERENCE)
    assert found is not None and found.expression == "last week"


def test_a_longer_expression_at_the_same_place_wins() -> None:
    found = find_time_range("8 May 2023", REFERENCE)
    assert found == DateRange(day(2023, 5, 8), day(2023, 5, 9), "8 May 2023")


def test_an_impossible_day_falls_back_to_its_month() -> None:
    found = find_time_range("31 February 2023", REFERENCE)
    assert found == DateRange(day(2023, 2, 1), day(2023, 3, 1), "February 2023")


def test_months_ago_cross_year_boundaries() -> None:
    found = find_time_range("2 months ago", datetime(2023, 1, 20))
    assert found == DateRange(day(2022, 11, 1), day(2022, 12, 1), "2 months ago")


def test_ranges_keep_the_reference_timezone() -> None:
    found = find_time_range("yesterday", datetime(2023, 6, 14, 9, tzinfo=UTC))
    assert found == DateRange(
        datetime(2023, 6, 13, tzinfo=UTC), datetime(2023, 6, 14, tzinfo=UTC), "yesterday"
    )


FRAGMENTS = st.sampled_from(
    ["May", "may", "8th", "2023", "last", "week", "ago", "3", "days", "in", "of", "\x00",
     "\ud800", "😀", "שלום", "-", "/", "9999", "0", "31", "February", "weekend", "past"]
)  # fmt: skip


@given(st.one_of(st.text(), st.lists(FRAGMENTS, max_size=12).map(" ".join)))
def test_any_text_gives_none_or_a_nonempty_range_read_from_the_text(text: str) -> None:
    found = find_time_range(text, REFERENCE)
    if found is not None:
        assert found.start < found.end
        assert found.expression and found.expression in text


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:59:59-05:00",  # year 10000 in UTC: OverflowError before
        "9999-12-31T23:59:59-23:59",
        "1000-01-01T00:30+01:00",  # year 999 in UTC: was stored
        "1000-01-01T00:00:00+14:00",
    ],
)
def test_an_aware_timestamp_is_range_checked_in_utc_with_a_clear_error(value: str) -> None:
    with pytest.raises(InputError, match="out of range"):
        normalize_timestamp(value)


def test_aware_timestamps_at_the_range_edges_that_stay_inside_in_utc_are_kept() -> None:
    assert normalize_timestamp("9999-12-31T23:59:59+05:00") == "9999-12-31T18:59:59Z"
    assert normalize_timestamp("1000-01-01T00:30-01:00") == "1000-01-01T01:30:00Z"


def test_a_day_or_month_without_a_year_recurs_and_a_dated_one_does_not() -> None:
    reference = datetime(2026, 11, 30, 18, 0)
    march = find_time_range("Where do we sleep in March?", reference)
    assert march is not None and march.recurs
    coming = next_occurrence(march)
    assert coming is not None
    assert (coming.start, coming.end) == (datetime(2027, 3, 1), datetime(2027, 4, 1))
    dated = find_time_range("What happened in March 2026?", reference)
    assert dated is not None and not dated.recurs and next_occurrence(dated) is None
    last_week = find_time_range("What did we settle on last week?", reference)
    assert last_week is not None and next_occurrence(last_week) is None


@pytest.mark.parametrize(
    ("text", "month", "expression"),
    [
        ("How much did the March trip cost?", 3, "March"),
        ("What are our May plans?", 5, "May"),
        ("Is my April dentist appointment moved?", 4, "April"),
        ("Who is coming to an August wedding?", 8, "August"),
        ("Did we pay for the december holidays?", 12, "december"),
    ],
)
def test_a_month_name_used_as_a_modifier_reads_as_that_month(text, month, expression) -> None:
    found = find_time_range(text, datetime(2026, 11, 30, 18, 0))
    assert found is not None and found.recurs
    assert (found.start.month, found.end - found.start >= timedelta(days=28)) == (month, True)
    assert found.expression == expression  # the word it modifies stays a search term


@pytest.mark.parametrize(
    "text",
    [
        "May I ask about the trip?",  # the verb, sentence-initial
        "I think we may plan it later",  # lowercase "may" is a verb
        "the march plans are off",  # so is lowercase "march"
        "They March on Monday",  # no determiner before it
        "April said the trip is off",  # a name
        "What did April say about the trip?",
        "I told her May would call",  # a name followed by a verb
        "Did you read about the March Hare?",  # a capitalized name follows
        "the June Carter biography",
        "for the May I think",
    ],
)
def test_a_month_word_that_is_a_verb_or_a_name_is_no_date(text: str) -> None:
    assert find_time_range(text, datetime(2026, 11, 30, 18, 0)) is None


def test_a_turn_naming_the_march_trip_means_the_coming_march() -> None:
    said = datetime(2026, 11, 18, 21, 15)
    (found,) = mentioned_ranges("Anselm and I moved the March trip to Piran.", said)
    assert (found.start, found.end) == (datetime(2027, 3, 1), datetime(2027, 4, 1))
