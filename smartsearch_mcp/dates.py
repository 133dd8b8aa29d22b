"""Parsing the dates that turns carry: ISO 8601 and the common formats chat exports use.

`normalize_timestamp` turns what a caller gives into one sortable ISO 8601 string. Naive
values stay naive (the wall-clock time the conversation reported); aware values are
converted to UTC.

What is stored (`stored_timestamp`) is always UTC with a "Z": a time given with an offset is
converted, a time given without one (LoCoMo's "4:20 pm on 17 June, 2024") is taken as UTC — the
same input is the same moment on every machine — and the string given is kept beside it
(`timestamp_raw`). Databases written before this hold such times without the "Z"; they are
read as UTC too (`stored_timestamp` adds it on reading). Relative spans in questions and
filters ("yesterday", "last week") are calendar spans in the local time zone of the machine
answering (its TZ), compared in UTC.
"""

from __future__ import annotations

import calendar
import dataclasses
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from smartsearch_mcp.types import InputError

MIN_YEAR = 1000
MAX_YEAR = 9999
# Unix epochs beyond this are read as milliseconds.
_EPOCH_MS_THRESHOLD = 10**11

_FORMATS: tuple[str, ...] = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "4:20 pm on 17 June, 2024"
    "%I:%M %p on %d %b, %Y",
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval: "2024/06/22 (Sat) 09:05"
    "%Y/%m/%d %H:%M",
    "%Y/%m/%d",
    "%B-%d-%Y",  # BEAM: "July-09-2024"
    "%b-%d-%Y",
    "%d %B %Y",
    "%d %B, %Y",
    "%d %b %Y",
    "%B %d, %Y",
    "%B %d %Y",
    "%b %d, %Y",
    "%b %d %Y",
    "%B %d, %Y %H:%M",
    "%B %d, %Y %I:%M %p",
    "%m/%d/%Y",
    "%m/%d/%Y %H:%M",
    "%m/%d/%Y %I:%M %p",
    "%d.%m.%Y",
    "%d.%m.%Y %H:%M",
    "%a, %d %b %Y %H:%M:%S %z",  # RFC 2822
    "%a %b %d %H:%M:%S %Y",
)


def parse_timestamp(value: str | int | float) -> datetime:
    """Parse a timestamp given as ISO 8601, a common date format, or a Unix epoch.

    Raises InputError with the accepted formats when the value cannot be read.
    """
    if isinstance(value, bool):
        raise InputError(f"timestamp must be a string or a number, got {value!r}")
    if isinstance(value, int | float):
        return _from_epoch(float(value))
    text = str(value).strip()
    if not text:
        raise InputError("timestamp is empty; omit it or give an ISO 8601 date")
    if re.fullmatch(r"-?\d{9,14}(\.\d+)?", text):
        return _from_epoch(float(text))
    iso = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        return _checked(datetime.fromisoformat(iso), value)
    except ValueError:
        pass
    cleaned = re.sub(r"\s+", " ", text)
    cleaned = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", cleaned, flags=re.IGNORECASE)
    for fmt in _FORMATS:
        try:
            return _checked(datetime.strptime(cleaned, fmt), value)
        except ValueError:
            continue
    raise InputError(
        f"cannot read timestamp {text[:80]!r}: use ISO 8601 (e.g. 2024-03-15 or "
        "2024-03-15T14:30:00Z), a Unix epoch, or a date like '8 May, 2023'"
    )


def normalize_timestamp(value: str | int | float | None) -> str | None:
    """ISO 8601 form of `value` (seconds precision), or None when no timestamp was given."""
    if value is None:
        return None
    if isinstance(value, str):
        return _normalize_text(value)
    return format_timestamp(parse_timestamp(value))


@functools.lru_cache(maxsize=4096)
def _normalize_text(value: str) -> str:
    # Imports repeat one session date over hundreds of turns: parse it once.
    return format_timestamp(parse_timestamp(value))


@functools.lru_cache(maxsize=65_536)
def stored_timestamp(normalized: str) -> str:
    """The stored form of a normalized timestamp: UTC with "Z" (a naive one is UTC). Cached:
    reads repeat a session's timestamps and share one string per value."""
    return normalized if normalized.endswith("Z") else normalized + "Z"


def format_timestamp(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
        return moment.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
    return moment.isoformat(timespec="seconds")


def comparable(moment: datetime) -> str:
    """The string form used to compare against stored timestamps (UTC, no suffix)."""
    return format_timestamp(moment).rstrip("Z")


def _from_epoch(seconds: float) -> datetime:
    if abs(seconds) >= _EPOCH_MS_THRESHOLD:
        seconds /= 1000.0
    try:
        moment = datetime.fromtimestamp(seconds, tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise InputError(f"timestamp {seconds!r} is out of range") from exc
    return _checked(moment, seconds)


def _checked(moment: datetime, original: object) -> datetime:
    """`moment` if its year, in UTC when it has a time zone (as it is stored), lies within
    MIN_YEAR..MAX_YEAR: 9999-12-31T23:00-05:00 is year 10000 in UTC, and 1000-01-01T00:30+01:00
    year 999."""
    problem = f"timestamp {original!r} is out of range (years {MIN_YEAR}-{MAX_YEAR}"
    try:
        stored = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    except OverflowError as exc:
        raise InputError(f"{problem} in UTC)") from exc
    if not MIN_YEAR <= stored.year <= MAX_YEAR:
        raise InputError(f"{problem}{' in UTC' if moment.tzinfo is not None else ''})")
    return moment


# --- Temporal expressions in queries --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DateRange:
    """A span of time a query refers to: `start` inclusive, `end` exclusive.

    `expression` is the text that was read (e.g. "last week"), an exact slice of the query.
    `recurs`: a day or month named without a year ("in February", "on May 8th") — the same
    span a year later is as good a reading (see `next_occurrence`).
    """

    start: datetime
    end: datetime
    expression: str = ""
    recurs: bool = dataclasses.field(default=False, compare=False)


def next_occurrence(span: DateRange) -> DateRange | None:
    """A recurring span one year later (None for a span that does not recur, or 29 February
    in a year without one)."""
    if not span.recurs:
        return None
    try:
        return DateRange(
            span.start.replace(year=span.start.year + 1),
            span.end.replace(year=span.end.year + 1),
            span.expression,
            recurs=True,
        )
    except ValueError:
        return None


_MONTHS: dict[str, int] = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}  # fmt: skip
_FULL_MONTHS = tuple(name for name in _MONTHS if len(name) > 4 or name in ("may", "june", "july"))


def month_words(months: Iterable[int]) -> list[str]:
    """The words (full names and abbreviations, lowercase) that name any of `months` (1-12)."""
    wanted = set(months)
    return [word for word, number in _MONTHS.items() if number in wanted]


_WEEKDAYS: dict[str, int] = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6,
}  # fmt: skip
_NUMBER_WORDS: dict[str, int] = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a couple": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_SEASONS: dict[str, tuple[int, int]] = {  # first month, number of months
    "spring": (3, 3), "summer": (6, 3), "fall": (9, 3), "autumn": (9, 3), "winter": (12, 3),
}  # fmt: skip

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_FULL_MONTH = r"(?P<month>" + "|".join(sorted(_FULL_MONTHS, key=len, reverse=True)) + r")"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_COUNT = (
    r"(?P<count>\d{1,4}|"
    + "|".join(re.escape(w) for w in sorted(_NUMBER_WORDS, key=len, reverse=True))
    + ")"
)
_UNIT = r"(?P<unit>day|week|wk|month|year|yr)s?"
_CALENDAR_UNIT = r"(?P<unit>week|wk|month|year|yr)"  # "last week", "this month", "next yr"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"
_SEASON = r"(?P<season>" + "|".join(_SEASONS) + r")"
_WEEKEND = r"(?:weekend|wknd)"
_B = r"(?<![\w-])"  # left word boundary that also refuses "-" (e.g. ids like "x-2023")
_E = r"(?![\w-])"
_NO_DATE_AFTER = r"(?!,?\s+(?:of\s+)?\d)"  # "in May" but not "in May 2023" or "in May 8"
# A month name as a modifier: "the February concert", "our May plans", "an August wedding" —
# after a determiner and before a lowercase word that is not a verb or function word ("the
# March Hare", "told her May would call", "for the May I" are no dates).
_DETERMINER = r"(?:the|our|my|your|his|her|their|that|a|an)"
_NOT_MODIFIED = (
    r"(?!(?:is|was|were|are|be|been|has|had|have|said|says|would|will|can|could|should|may|"
    r"might|must|and|or|but|to|from|of|in|on|at|for|with|i|you|he|she|we|they|it)\b)"
)
_MODIFIED = r"(?=\s+" + _NOT_MODIFIED + r"(?-i:[a-z]{2,})\b)"
# A day of the month alone: "on the 21st", "what happened the 3rd?" — an ordinal, not followed
# by a month ("the 21st of March" is `day_month`) or by the noun it counts ("the 2nd floor",
# "the 21st century", "the 3rd, 4th and 5th"): at the end, before punctuation or before a word
# that starts a clause.
_ORDINAL_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)"
_ALONE = (
    r"(?=\s*$|\s*[^\w\s,]|,(?!\s*(?:and\s+)?\d)"
    r"|\s+(?:at|around|when|but|i|we|you|he|she|they|it|this|"
    r"last|in\s+the\s+(?:morning|afternoon|evening))\b)"
)

_TIME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("iso_day", _B + r"(?P<year>\d{4})[-/](?P<month>\d{1,2})[-/](?P<day>\d{1,2})" + _E),
        ("day_month_year", _B + _DAY + r"(?:\s+of)?\s+" + _MONTH + r",?\s+" + _YEAR + _E),
        ("month_day_year", _B + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + _E),
        ("month_year", _B + _MONTH + r",?\s+(?:of\s+)?" + _YEAR + _E),
        ("season_year", _B + _SEASON + r",?\s+(?:of\s+)?" + _YEAR + _E),
        ("day_month", _B + _DAY + r"(?:\s+of)?\s+" + _MONTH + _E),
        ("month_day", _B + _MONTH + r"\s+" + _DAY + _E),
        ("day_alone", _B + r"(?:on\s+)?the\s+" + _ORDINAL_DAY + _E + _ALONE),
        ("year", r"(?<![\w-])(?:in|during|throughout|of|year)\s+" + _YEAR + _E),
        ("day_before_yesterday", _B + r"the\s+day\s+before\s+yesterday" + _E),
        ("yesterday", _B + r"(?:yesterday|yday|last\s+night)" + _E),
        (
            "today",
            _B
            + r"(?:today|tonight|tonite|2nite|this\s+morning|this\s+afternoon|this\s+evening)"
            + _E,
        ),
        ("ago", _B + _COUNT + r"\s+" + _UNIT + r"\s+ago" + _E),
        ("past_n", _B + r"(?:the\s+)?(?:past|last|previous)\s+" + _COUNT + r"\s+" + _UNIT + _E),
        ("past_unit", _B + r"(?:the\s+)?past\s+" + _CALENDAR_UNIT + _E),
        ("last_weekend", _B + r"(?:last|this\s+past)\s+" + _WEEKEND + _E),
        ("this_weekend", _B + r"this\s+" + _WEEKEND + _E),
        ("last_weekday", _B + r"(?:last|this\s+past)\s+" + _WEEKDAY + _E),
        ("last_unit", _B + r"(?:last|previous)\s+" + _CALENDAR_UNIT + _E),
        ("this_unit", _B + r"(?:this|the\s+current)\s+" + _CALENDAR_UNIT + _E),
        ("last_season", _B + r"(?:last|this\s+past)\s+" + _SEASON + _E),
        ("last_month_name", _B + r"(?:last|this\s+past)\s+" + _FULL_MONTH + _E + _NO_DATE_AFTER),
        ("day_after_tomorrow", _B + r"the\s+day\s+after\s+tomorrow" + _E),
        ("tomorrow", _B + r"(?:tomorrow|tmrw|tmr|2moro|2morrow)" + _E),
        ("in_n", _B + r"in\s+" + _COUNT + r"\s+" + _UNIT + r"(?:(?:'s|')?\s+time)?" + _E),
        ("next_weekend", _B + r"next\s+" + _WEEKEND + _E),
        ("next_weekday", _B + r"next\s+" + _WEEKDAY + _E),
        ("next_unit", _B + r"next\s+" + _CALENDAR_UNIT + _E),
        ("next_month_name", _B + r"next\s+" + _FULL_MONTH + _E + _NO_DATE_AFTER),
        ("in_month", r"(?<![\w-])(?:in|during|throughout)\s+" + _FULL_MONTH + _E + _NO_DATE_AFTER),
        ("month_modifier", _B + _DETERMINER + r"\s+" + _FULL_MONTH + _E + _MODIFIED),
    )
)


def find_time_range(text: str, reference: datetime) -> DateRange | None:
    """The time span the first date expression in `text` refers to, or None.

    Absolute dates ("17 June 2024", "June 17th, 2024", "2024-06-17", "June 2024", "in 2022",
    "summer of 2021") read as that day, month, season or year. A day or month without a year
    ("on June 17th", "in March"), or a day of the month alone ("on the 21st"), is its latest
    occurrence not after `reference`. Relative
    expressions count back from `reference`, in calendar units with weeks starting on Monday:
    "yesterday", "today", "N days/weeks/months/years ago" (that day, week, month or year),
    "the past N days" (a rolling window up to the end of today), "last week/month/year",
    "this week/month/year", "last Saturday", "last weekend", "last summer", "last May"; and
    ahead of it: "tomorrow", "in N days/weeks/months/years", "next week/month/year", "next
    Friday" (the first one after today), "this weekend" (the coming one, or the one under
    way), "next weekend", "next May"; with chat spellings ("tmrw", "yday", "2nite", "last
    wk", "this wknd", "2 yrs ago"). A month name used as a modifier ("the February concert",
    "our May plans") reads as "in February".
    The leftmost expression wins; at the same position, the longest. Results keep the
    reference's tzinfo; times are midnight boundaries.
    """
    best: tuple[int, int, DateRange] | None = None
    for kind, pattern in _TIME_PATTERNS:
        for match in pattern.finditer(text):
            found = _resolve(kind, match, reference)
            if found is None:
                continue
            found_range, begin = found
            if kind in _NEAREST_KINDS:
                found_range = dataclasses.replace(found_range, recurs=True)
            key = (begin, -(match.end() - begin))
            if best is None or key < (best[0], best[1]):
                best = (key[0], key[1], found_range)
            break
    return best[2] if best is not None else None


# A day or month named without a year in a turn ("on December 3rd", "in March") is the
# occurrence nearest the turn's own time: plans look ahead as often as memories look back.
_NEAREST_KINDS = frozenset({"day_month", "month_day", "in_month", "month_modifier"})
# Read in questions only: a turn's "on the 21st" may be this month's or next month's (a plan),
# and a wrong month would date the turn with a day it never named.
_QUERY_ONLY_KINDS = frozenset({"day_alone"})
# Kinds whose month is named without a year: a lowercase "may" or "march" there is a verb.
_BARE_MONTH_KINDS = frozenset(
    {"month_day", "day_month", "in_month", "last_month_name", "next_month_name", "month_modifier"}
)
# Days and calendar units counted from today's by the expression alone.
_DAY_SHIFTS = {"day_before_yesterday": -2, "yesterday": -1, "today": 0, "tomorrow": 1,
               "day_after_tomorrow": 2}  # fmt: skip
_UNIT_SHIFTS = {"last_unit": -1, "this_unit": 0, "next_unit": 1}
_HALF_YEAR = timedelta(days=183)


def mentioned_ranges(text: str, reference: datetime) -> list[DateRange]:
    """Every date expression in `text` (a turn), resolved against `reference` (when the
    turn was said): "on December 3rd", "3 Dec 2026", "yesterday", "last week", ... — the
    same expressions `find_time_range` reads, in text order, overlapping ones once. A day
    or month without a year is the occurrence nearest `reference`, before or after."""
    found: list[tuple[int, int, DateRange]] = []
    for kind, pattern in _TIME_PATTERNS:
        if kind in _QUERY_ONLY_KINDS:
            continue
        for match in pattern.finditer(text):
            resolved = _resolve(kind, match, reference)
            if resolved is None:
                continue
            span, begin = resolved
            if kind in _NEAREST_KINDS and reference - span.start > _HALF_YEAR:
                try:
                    span = DateRange(
                        span.start.replace(year=span.start.year + 1),
                        span.end.replace(year=span.end.year + 1),
                        span.expression,
                    )
                except ValueError:  # 29 February
                    continue
            found.append((begin, match.end(), span))
    found.sort(key=lambda item: (item[0], -(item[1] - item[0])))
    out: list[DateRange] = []
    end = -1
    for begin, finish, span in found:
        if begin >= end:
            out.append(span)
            end = finish
    return out


def _resolve(kind: str, match: re.Match[str], reference: datetime) -> tuple[DateRange, int] | None:
    """The range `match` means and where its expression starts (lead-ins like "in" dropped)."""
    groups = match.groupdict()
    begin = match.start()
    if kind in ("year", "in_month", "month_modifier"):
        begin = match.start("year" if kind == "year" else "month")
    month_word = groups.get("month")
    if (
        month_word is not None
        and month_word.lower().rstrip(".") in ("may", "march")
        and not month_word[0].isupper()
        and kind in _BARE_MONTH_KINDS
    ):
        return None  # lowercase "may"/"march" without a year is a verb
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        start, end = _span(kind, groups, today)
    except (ValueError, OverflowError):
        return None  # e.g. "31 February 2023" or "9999 years ago"
    if not (MIN_YEAR <= start.year <= MAX_YEAR and start < end):
        return None
    return DateRange(start=start, end=end, expression=match.string[begin : match.end()]), begin


# Chat spellings of calendar units ("last wk", "2 yrs ago").
_UNIT_WORDS = {"wk": "week", "yr": "year"}


def _span(kind: str, g: dict[str, str | None], today: datetime) -> tuple[datetime, datetime]:
    one_day = timedelta(days=1)
    if (unit := (g.get("unit") or "").lower()) in _UNIT_WORDS:
        g = {**g, "unit": _UNIT_WORDS[unit]}
    week_start = today - timedelta(days=today.weekday())
    if kind in ("iso_day", "day_month_year", "month_day_year"):
        day = today.replace(year=int(_req(g, "year")), month=_month(g), day=int(_req(g, "day")))
        return day, day + one_day
    if kind == "month_year":
        first = today.replace(year=int(_req(g, "year")), month=_month(g), day=1)
        return first, _add_months(first, 1)
    if kind == "season_year":
        first_month, months = _SEASONS[_req(g, "season").lower()]
        first = today.replace(year=int(_req(g, "year")), month=first_month, day=1)
        return first, _add_months(first, months)
    if kind in ("day_month", "month_day"):
        day = today.replace(month=_month(g), day=int(_req(g, "day")))
        if day > today:
            day = day.replace(year=day.year - 1)
        return day, day + one_day
    if kind == "day_alone":  # the latest month that has that day, not after today
        number = int(_req(g, "day"))
        for back in range(12):
            first = _add_months(today.replace(day=1), -back)
            if number <= calendar.monthrange(first.year, first.month)[1]:
                day = first.replace(day=number)
                if day <= today:
                    return day, day + one_day
        raise ValueError(f"no day {number} in the past year")
    if kind == "year":
        first = today.replace(year=int(_req(g, "year")), month=1, day=1)
        return first, first.replace(year=first.year + 1)
    if kind in _DAY_SHIFTS:
        return _calendar_unit("day", _DAY_SHIFTS[kind], today)
    if kind in ("ago", "in_n"):  # "3 days ago", "in two weeks": that day, week, month, year
        count = _count(g)
        return _calendar_unit(_req(g, "unit").lower(), -count if kind == "ago" else count, today)
    if kind == "past_n":
        count, unit = _count(g), _req(g, "unit").lower()
        end = today + one_day
        if unit == "day":
            return end - count * one_day, end
        if unit == "week":
            return end - timedelta(weeks=count), end
        if unit == "month":
            return _add_months(end, -count), end
        return _add_months(end, -12 * count), end
    if kind == "past_unit":
        unit, end = _req(g, "unit").lower(), today + one_day
        if unit == "week":
            return end - timedelta(weeks=1), end
        return _add_months(end, -1 if unit == "month" else -12), end
    if kind == "last_weekend":
        saturday = week_start - 2 * one_day
        return saturday, saturday + 2 * one_day
    if kind == "last_weekday":
        back = (today.weekday() - _WEEKDAYS[_req(g, "weekday").lower()]) % 7 or 7
        day = today - back * one_day
        return day, day + one_day
    if kind in _UNIT_SHIFTS:  # last, this, next week/month/year
        return _calendar_unit(_req(g, "unit").lower(), _UNIT_SHIFTS[kind], today)
    if kind == "last_season":
        first_month, months = _SEASONS[_req(g, "season").lower()]
        start = today.replace(month=first_month, day=1)
        while _add_months(start, months) > today:
            start = start.replace(year=start.year - 1)
        return start, _add_months(start, months)
    if kind == "this_weekend":  # the coming one, or the one under way
        saturday = week_start + 5 * one_day
        return saturday, saturday + 2 * one_day
    if kind == "next_weekend":
        saturday = week_start + 5 * one_day
        if saturday <= today:  # on a weekend: the one after it
            saturday += timedelta(weeks=1)
        return saturday, saturday + 2 * one_day
    if kind == "next_weekday":  # the first one after today
        ahead = (_WEEKDAYS[_req(g, "weekday").lower()] - today.weekday()) % 7 or 7
        day = today + ahead * one_day
        return day, day + one_day
    if kind == "next_month_name":  # the first such month after this one
        start = today.replace(month=_month(g), day=1)
        if start.month <= today.month:
            start = start.replace(year=start.year + 1)
        return start, _add_months(start, 1)
    if kind in ("last_month_name", "in_month", "month_modifier"):
        start = today.replace(month=_month(g), day=1)
        if (kind == "last_month_name" and start.month >= today.month) or start > today:
            start = start.replace(year=start.year - 1)
        return start, _add_months(start, 1)
    raise ValueError(f"unknown time expression kind {kind!r}")


def _calendar_unit(unit: str, shift: int, today: datetime) -> tuple[datetime, datetime]:
    """The calendar day, week (from Monday), month or year `shift` units from today's."""
    if unit == "day":
        day = today + timedelta(days=shift)
        return day, day + timedelta(days=1)
    if unit == "week":
        start = today - timedelta(days=today.weekday()) + timedelta(weeks=shift)
        return start, start + timedelta(weeks=1)
    if unit == "month":
        start = _add_months(today.replace(day=1), shift)
        return start, _add_months(start, 1)
    start = today.replace(year=today.year + shift, month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _req(groups: dict[str, str | None], name: str) -> str:
    value = groups.get(name)
    if value is None:
        raise ValueError(f"time expression has no {name}")
    return value


def _month(groups: dict[str, str | None]) -> int:
    word = _req(groups, "month").lower().rstrip(".")
    return int(word) if word.isdigit() else _MONTHS[word]


def _count(groups: dict[str, str | None]) -> int:
    word = re.sub(r"\s+", " ", _req(groups, "count").lower())
    return int(word) if word.isdigit() else _NUMBER_WORDS[word]


def _add_months(moment: datetime, months: int) -> datetime:
    """`moment` (the first of a month) moved by whole months."""
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1)


def parse_time_bound(value: str, reference: datetime, *, end: bool = False) -> datetime:
    """A moment for a `since` / `until` filter: an absolute timestamp, or a relative or named
    span ("yesterday", "last week", "3 days ago", "May 2023") read against `reference`.

    A span gives its start, or with `end` its (exclusive) end, so since="last week" and
    until="last week" together cover last week. Raises InputError naming both forms.
    """
    try:
        return parse_timestamp(value)
    except InputError:
        found = find_time_range(value, reference)
    if found is None:
        raise InputError(
            f"cannot read {value[:80]!r} as a date: give ISO 8601 (2024-03-15 or "
            "2024-03-15T14:30:00Z) or a span like 'yesterday', 'last week', '3 days ago'"
        )
    return found.end if end else found.start
