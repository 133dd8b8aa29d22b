"""The `timeline` tool's rules: which turns, in which order, how much of each.

With `since`, the earliest `limit` turns from then on; without it, the latest `limit` turns
(so "what did we do recently" works without a date). Either way they come back oldest first.
Long turns are cut to `TEXT_CHARS` characters; the whole turn is memory://turns/{id}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from smartsearch_mcp.dates import parse_time_bound
from smartsearch_mcp.types import InputError, Turn

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
TEXT_CHARS = 1000


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    turn: Turn
    text: str  # the turn's text, cut to TEXT_CHARS
    text_truncated: bool


@dataclass(frozen=True, slots=True)
class TimelineResult:
    entries: list[TimelineEntry]
    since: datetime | None
    until: datetime | None
    more: bool  # more turns fall in the window than `limit`
    warnings: list[str] = field(default_factory=list)


def check_limit(limit: int | None) -> int:
    value = DEFAULT_LIMIT if limit is None else limit
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_LIMIT:
        raise InputError(f"limit must be an integer between 1 and {MAX_LIMIT}, got {limit!r}")
    return value


def parse_window(
    since: str | None, until: str | None, reference: datetime
) -> tuple[datetime | None, datetime | None]:
    """`since` / `until` as moments (absolute, or spans like "yesterday" read against
    `reference`); InputError when unreadable or when since is not before until."""
    start = _bound("since", since, reference, end=False)
    stop = _bound("until", until, reference, end=True)
    if start is not None and stop is not None and _naive(start) >= _naive(stop):
        raise InputError("since must be earlier than until")
    return start, stop


def entries(turns: list[Turn]) -> list[TimelineEntry]:
    return [TimelineEntry(t, t.text[:TEXT_CHARS], len(t.text) > TEXT_CHARS) for t in turns]


def _bound(name: str, value: str | None, reference: datetime, *, end: bool) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        return parse_time_bound(value.strip(), reference, end=end)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from exc


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
