"""The question's time range first: "What did we agree on last week?" is about last week."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from smartsearch_mcp.dates import DateRange
from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.dated import windows_of
from smartsearch_mcp.types import Scored


def prefer_time_range(
    scored: Sequence[Scored], time_range: DateRange | None
) -> tuple[list[Scored], str | None]:
    """Passages inside the question's time range first, then the others, each group in its
    ranked order; and a warning when none is inside (the ranking is then unchanged).

    A passage is inside when its turn was said in the range or its text names a date in it
    (`dated.DateWindow.holds`); for a day or month named without a year, when nothing is
    inside its last occurrence, the next one is tried (`dated.windows_of`). Inside passages
    are raised by the best score so that scores stay sorted: "What did we agree on last
    week?" is about last week, however well an older decision matches the words.
    """
    if time_range is None or not scored:
        return list(scored), None
    inside: list[bool] = []
    for window in windows_of(time_range):
        # "Where are we skiing in January?" asked in November: last January holds nothing,
        # the coming one may (a plan, a booking)
        inside = [window.holds(item.candidate.passage) for item in scored]
        if any(inside):
            break
    if not any(inside):
        when = time_range.expression or "the question's dates"
        return list(scored), (
            f"nothing recalled falls in {when!r} ({time_range.start:%Y-%m-%d} to "
            f"{time_range.end:%Y-%m-%d}, end excluded); these are the best matches from any time"
        )
    if all(inside):
        return list(scored), None
    lift = max(0.0, max(item.score for item in scored)) - min(
        item.score for item, ok in zip(scored, inside, strict=True) if ok
    )
    raised = [
        dataclasses.replace(item, score=item.score + lift) if ok else item
        for item, ok in zip(scored, inside, strict=True)
    ]
    order = sorted(range(len(raised)), key=lambda i: (not inside[i], i))
    return [raised[i] for i in order], None


def time_range(scored: list[Scored], context: Context) -> list[Scored]:
    if context.analysis is None:
        return scored
    ranked, outside = prefer_time_range(scored, context.analysis.time_range)
    if outside is not None:
        context.warnings.append(outside)
    return ranked
