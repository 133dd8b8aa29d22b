"""Burst credit: a thought sent as several messages ("ahh" / "passed my driving test" /
"first try!!") is recalled whole (the grouping is `pipeline.bursts`)."""

from __future__ import annotations

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.bursts import credit_bursts
from smartsearch_mcp.types import Scored


def burst_credit(scored: list[Scored], context: Context) -> list[Scored]:
    return credit_bursts(scored, context.rank.burst_credit, context.burst_seconds)
