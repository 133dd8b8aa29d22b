"""Reciprocal-rank fusion: a pure function over score lists; and the order after a rule
lifts some passages' scores."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from smartsearch_mcp.types import Scored


def reciprocal_rank_fusion(
    scores: Mapping[str, Sequence[float] | np.ndarray],
    k: int = 60,
    weights: Mapping[str, float] | None = None,
) -> list[float]:
    """Fuse rankers' scores into one score per candidate: sum of weight / (k + rank).

    `scores` maps a ranker name to one score per candidate, all in the same candidate
    order; higher is better. Ranks start at 1. Tied scores share the best rank of the tie
    (competition ranking, "1224"), so the result does not depend on candidate order:
    permuting the candidates permutes the output the same way. NaN ranks below every
    number. A ranker missing from `weights` weighs 1.0; weight 0 ignores it. Rankers are
    summed in name order, so the floats do not depend on mapping order either. Callers
    sorting by the fused score break its ties by candidate index (a stable sort).

    The one RRF of the pipeline: it fuses the rankers (stage 4) and the retrieval channels
    over a whole scope (stage 2), hence vectorized. Returns [] when there are no rankers.
    Raises ValueError when the rankers disagree on the number of candidates, or for a
    negative k or weight.
    """
    if k < 0:
        raise ValueError(f"rrf k must not be negative, got {k}")
    if not scores:
        return []
    lengths = {name: len(values) for name, values in scores.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"rankers scored different numbers of candidates: {lengths}")
    fused = np.zeros(next(iter(lengths.values())), dtype=np.float64)
    for name in sorted(scores):
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        if weight < 0 or math.isnan(weight):
            raise ValueError(f"weight of ranker {name!r} must be a non-negative number")
        if weight == 0:
            continue
        fused += weight / (k + _competition_ranks(np.asarray(scores[name], dtype=np.float64)))
    return fused.tolist()


def competition_ranks(values: Sequence[float] | np.ndarray) -> list[int]:
    """1-based rank of each value, highest first; equal values share the best rank of their
    tie ([5, 9, 5, 1] -> [2, 1, 2, 4]); NaN ranks last."""
    return _competition_ranks(np.asarray(values, dtype=np.float64)).tolist()


def _competition_ranks(values: np.ndarray) -> np.ndarray:
    size = len(values)
    keys = np.nan_to_num(values, nan=-np.inf, posinf=np.inf, neginf=-np.inf)
    order = np.lexsort((np.arange(size), -keys))
    ordered = keys[order]
    first = np.empty(size, dtype=bool)
    first[:1] = True
    first[1:] = ordered[1:] != ordered[:-1]
    best = np.maximum.accumulate(np.where(first, np.arange(1, size + 1), 0))
    ranks = np.empty(size, dtype=np.int64)
    ranks[order] = best
    return ranks


def with_lifted_scores(
    scored: Sequence[Scored],
    scores: Sequence[float],
    confidences: Sequence[float | None],
    order_key: Sequence[float],
) -> list[Scored]:
    """`scored` with the `scores` and `confidences` a rule gave them (reply credit, bursts),
    sorted again best first; equal scores in `order_key` order (a lifted passage's key puts
    it next to the one that lifted it)."""
    out = [
        item
        if scores[i] == item.score and confidences[i] == item.confidence
        else dataclasses.replace(item, score=scores[i], confidence=confidences[i])
        for i, item in enumerate(scored)
    ]
    order = sorted(range(len(out)), key=lambda i: (-out[i].score, order_key[i]))
    return [out[i] for i in order]


def lower_flagged(
    scored: Sequence[Scored], discount: float, flagged: Sequence[bool]
) -> list[Scored]:
    """`scored` with each flagged (finite) score lowered by `discount` x |score|, sorted
    again best first (ties keep their order)."""
    lowered = [
        dataclasses.replace(item, score=item.score - discount * abs(item.score))
        if flag and math.isfinite(item.score)
        else item
        for item, flag in zip(scored, flagged, strict=True)
    ]
    order = sorted(range(len(lowered)), key=lambda i: (-lowered[i].score, i))
    return [lowered[i] for i in order]
