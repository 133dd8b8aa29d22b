"""The kind of value asked for first: asked "when" or "what time", of the best few passages
those that give a day or a time of day go first."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.bursts import burst_units, units_in_order
from smartsearch_mcp.pipeline.updates import asked_value_kinds, gives_a_value_of
from smartsearch_mcp.types import Scored

# Only the best few trade places: further down, a passage that merely names a date is no
# likelier to answer than the better matches above it (LoCoMo, both halves, the 193 questions
# asking a day or time: with the best 3 the answer moved first for 21 and away from first for
# 4; with the best 5, 27 and 7).
ASKED_VALUE_WINDOW = 3
# Only a day or a time asked for: a number asked for ("how many") is more often counted over
# the conversation than said in one turn ("How many dresses did she review in total?"), so a
# passage giving a number is no likelier to answer (Mem-Gallery B: 0 answers moved first, 4
# moved away; LoCoMo 0 and 1).
WHEN_KINDS = frozenset({"date", "clock"})


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
    units = burst_units(scored, burst_seconds)[:ASKED_VALUE_WINDOW]
    gives = [
        any(gives_a_value_of(scored[i].candidate.passage, kinds) for i in unit) for unit in units
    ]
    if all(gives) or not any(gives):
        return list(scored)
    order = [k for k in range(len(units)) if gives[k]] + [
        k for k in range(len(units)) if not gives[k]
    ]
    return units_in_order(scored, units, order)


def asked_value(scored: list[Scored], context: Context) -> list[Scored]:
    kinds = asked_value_kinds(context.query)
    if WHEN_KINDS.isdisjoint(kinds):
        return list(scored)
    return prefer_asked_values(scored, kinds, context.burst_seconds)
