"""Session support: evidence for a question tends to sit in the session where its topic was
discussed."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from smartsearch_mcp.pipeline.adjust.context import Context
from smartsearch_mcp.types import Scored


def add_session_support(scored: Sequence[Scored], weight: float, top_n: int) -> list[Scored]:
    """Raise each passage by `weight` x the mean score of the `top_n` best passages of its
    session (itself included) and sort again, best first (ties keep their order).

    Evidence for a question tends to sit in the session where the question's topic was
    discussed; a passage in a session with several strong passages is more likely relevant
    than an equally scored stray one. weight 0 returns the input order unchanged.
    """
    if weight <= 0 or not scored:
        return list(scored)
    by_session: dict[tuple[str, str], list[float]] = {}
    for item in scored:
        turn = item.candidate.passage.turn
        by_session.setdefault((turn.namespace, turn.session_id), []).append(item.score)
    support = {key: _mean_of_best(values, top_n) for key, values in by_session.items()}
    raised = []
    for item in scored:
        turn = item.candidate.passage.turn
        lift = weight * support[(turn.namespace, turn.session_id)]
        raised.append(dataclasses.replace(item, score=item.score + lift))
    order = sorted(range(len(raised)), key=lambda i: (-raised[i].score, i))
    return [raised[i] for i in order]


def _mean_of_best(values: Sequence[float], top_n: int) -> float:
    best = sorted(values, reverse=True)[:top_n]
    return sum(best) / len(best)


def session_support(scored: list[Scored], context: Context) -> list[Scored]:
    rank = context.rank
    return add_session_support(scored, rank.session_weight, rank.session_top)
