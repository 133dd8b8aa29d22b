"""After fusion: the adjustments of the ranking, each `(list[Scored], Context) ->
list[Scored]`, registered by the name `smartsearch_mcp.stages.ADJUSTMENTS` gives it; a preset
lists those that run, in order (`rank.adjust`).

Each keeps every passage, leaves the scores sorted best first and is deterministic (the
shared tests of tests/pipeline/test_adjust.py hold every registered one to that)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from smartsearch_mcp.pipeline.adjust.asked_value import asked_value
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
    "asked_value": asked_value,
    "current_facts": current_facts,
}


def adjust(
    scored: list[Scored], stage: str, context: Context, phase: str | None = None
) -> list[Scored]:
    """`scored` through the adjustments of `stage` ("fusion" or "final") that
    `context.rank.adjust` lists, in its order; each one's effect goes to `context.trace`
    when the recall is explained, under `phase` (default: the stage)."""
    for name in context.rank.adjustments(stage):
        before = scored
        scored = ADJUST[name](scored, context)
        if context.trace is not None:
            context.trace.adjusted(name, phase or stage, before, scored)
    return scored


__all__ = ["ADJUST", "Adjustment", "Context", "adjust"]
