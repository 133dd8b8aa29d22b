"""After fusion: the adjustments of the ranking, each `(list[Scored], Context) ->
list[Scored]`, registered by the name `smartsearch_mcp.stages.ADJUSTMENTS` gives it; a preset
lists those that run, in order (`rank.adjust`).

Each keeps every passage, leaves the scores sorted best first and is deterministic (the
shared tests of tests/pipeline/test_adjust.py hold every registered one to that)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from smartsearch_mcp.pipeline.adjust.bursts import burst_credit
from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.adjust.current import current_facts
from smartsearch_mcp.pipeline.adjust.replies import echo_discount, reply_credit
from smartsearch_mcp.pipeline.adjust.session import session_support
from smartsearch_mcp.pipeline.adjust.slices import slice_discount
from smartsearch_mcp.pipeline.adjust.time_range import time_range
from smartsearch_mcp.types import Scored

Adjustment = Callable[[list[Scored], Context], list[Scored]]

ADJUST: Mapping[str, Adjustment] = {
    "session_support": session_support,
    "burst_credit": burst_credit,
    "reply_credit": reply_credit,
    "echo_discount": echo_discount,
    "slice_discount": slice_discount,
    "time_range": time_range,
    "current_facts": current_facts,
}


def adjust(scored: list[Scored], stage: str, context: Context) -> list[Scored]:
    """`scored` through the adjustments of `stage` ("fusion" or "final") that
    `context.rank.adjust` lists, in its order."""
    for name in context.rank.adjustments(stage):
        scored = ADJUST[name](scored, context)
    return scored


__all__ = ["ADJUST", "Adjustment", "Context", "adjust"]
