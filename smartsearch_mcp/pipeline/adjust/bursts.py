"""Burst credit: a thought sent as several messages ("ahh" / "passed my driving test" /
"first try!!") is recalled whole (the grouping is `pipeline.bursts`), led by the message that
gives the kind of value the question asks for, when one does."""

from __future__ import annotations

import functools
from collections.abc import Callable

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.pipeline.bursts import credit_bursts
from smartsearch_mcp.pipeline.updates import asked_value_kinds, gives_a_value_of
from smartsearch_mcp.types import Passage, Scored


def burst_credit(scored: list[Scored], context: Context) -> list[Scored]:
    return credit_bursts(
        scored, context.rank.burst_credit, context.burst_seconds, _gives_what_was_asked(context)
    )


def _gives_what_was_asked(context: Context) -> Callable[[Passage], bool] | None:
    """Whether a passage gives a value of a kind the question asks for (a date or time asked
    "when", a number asked "how many"); None when the question asks for none."""
    kinds = asked_value_kinds(context.query)
    return functools.partial(gives_a_value_of, kinds=kinds) if kinds else None
