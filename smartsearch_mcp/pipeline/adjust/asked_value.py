"""The kind of value asked for first: asked "when", of the best few passages those that give
a day or a time of day go first; asked "how many", those that give a number."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.bursts import burst_units, units_in_order
from smartsearch_mcp.pipeline.updates import asked_value_kinds, values_of
from smartsearch_mcp.types import Scored

# Only the best few trade places: further down, a passage that merely names a date is no
# likelier to answer than the better matches above it (LoCoMo, both halves, the 240 questions
# asking a value: with the best 3 the answer moved first for 21 and away from first for 5;
# with the best 5, 27 and 9).
ASKED_VALUE_WINDOW = 3


def prefer_asked_values(
    scored: Sequence[Scored], kinds: Collection[str], burst_seconds: int = 0
) -> list[Scored]:
    """Of the first `ASKED_VALUE_WINDOW` passages, those giving a value of one of `kinds`
    (`updates.values_of`) go before those giving none, each group in its ranked order; the
    scores stay where they were (the passages trade places and scores, so the same passages
    fit the budget), each passage keeps its confidence. A burst of messages
    (`pipeline.bursts`, `burst_seconds` apart at most) counts as one passage that gives what
    any of its messages gives, and moves whole."""
    if not kinds or len(scored) < 2:
        return list(scored)
    wanted = frozenset(kinds)
    units = burst_units(scored, burst_seconds)[:ASKED_VALUE_WINDOW]
    gives = [
        any(
            not wanted.isdisjoint(values_of(passage.text, passage.turn.timestamp or ""))
            for passage in (scored[i].candidate.passage for i in unit)
        )
        for unit in units
    ]
    if all(gives) or not any(gives):
        return list(scored)
    order = [k for k in range(len(units)) if gives[k]] + [
        k for k in range(len(units)) if not gives[k]
    ]
    return units_in_order(scored, units, order)


def asked_value(scored: list[Scored], context: Context) -> list[Scored]:
    return prefer_asked_values(scored, asked_value_kinds(context.query), context.burst_seconds)
