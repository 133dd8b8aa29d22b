"""The slice discount: a long turn's passages share its subject."""

from __future__ import annotations

from collections.abc import Sequence

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.fusion import lower_flagged
from smartsearch_mcp.types import Scored


def discount_later_slices(scored: Sequence[Scored], discount: float) -> list[Scored]:
    """Lower every passage of a turn but that turn's best-ranked one by `discount` x its
    score, and sort again, best first (ties keep their order).

    A long turn is cut into passages (`passages.max_words`); its slices share its subject, so
    the second and third best slices of one long answer tend to crowd out other turns' best
    passages under a budget. 0 returns the input unchanged."""
    if discount <= 0 or not scored:
        return list(scored)
    seen: set[int] = set()
    later = []
    for item in scored:
        turn_id = item.candidate.passage.turn.id
        later.append(turn_id in seen)
        seen.add(turn_id)
    return lower_flagged(scored, discount, later)


def slice_discount(scored: list[Scored], context: Context) -> list[Scored]:
    return discount_later_slices(scored, context.rank.slice_discount)
