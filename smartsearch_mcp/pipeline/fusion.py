"""Reciprocal-rank fusion and score normalization: pure functions over score lists."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(
    scores: Mapping[str, Sequence[float]],
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

    Returns [] when there are no rankers. Raises ValueError when the rankers disagree on the
    number of candidates, or for a negative k or weight.
    """
    if k < 0:
        raise ValueError(f"rrf k must not be negative, got {k}")
    if not scores:
        return []
    lengths = {name: len(values) for name, values in scores.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"rankers scored different numbers of candidates: {lengths}")
    fused = [0.0] * next(iter(lengths.values()))
    for name in sorted(scores):
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        if weight < 0 or math.isnan(weight):
            raise ValueError(f"weight of ranker {name!r} must be a non-negative number")
        if weight == 0:
            continue
        for index, rank in enumerate(competition_ranks(scores[name])):
            fused[index] += weight / (k + rank)
    return fused


def competition_ranks(values: Sequence[float]) -> list[int]:
    """1-based rank of each value, highest first; equal values share the best rank of their
    tie ([5, 9, 5, 1] -> [2, 1, 2, 4]); NaN ranks last."""
    keys = [_rank_key(v) for v in values]
    order = sorted(range(len(keys)), key=keys.__getitem__, reverse=True)
    ranks = [0] * len(keys)
    for position, index in enumerate(order):
        if position > 0 and keys[index] == keys[order[position - 1]]:
            ranks[index] = ranks[order[position - 1]]
        else:
            ranks[index] = position + 1
    return ranks


def _rank_key(value: float) -> float:
    value = float(value)
    return -math.inf if math.isnan(value) else value


def min_max_normalize(values: Sequence[float]) -> list[float]:
    """Scale values linearly to [0, 1] (lowest finite -> 0, highest finite -> 1).

    Constant input carries no ranking information and maps to all 0.0. +inf maps to 1.0;
    -inf and NaN map to 0.0.
    """
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return [1.0 if v == math.inf else 0.0 for v in values]
    # Halved so that the span of two huge values of opposite sign cannot overflow.
    low, high = min(finite) / 2, max(finite) / 2
    span = high - low
    result = []
    for value in values:
        if math.isnan(value) or value == -math.inf:
            result.append(0.0)
        elif value == math.inf:
            result.append(1.0)
        elif span <= 0:
            result.append(0.0)
        else:
            result.append(min(1.0, max(0.0, (float(value) / 2 - low) / span)))
    return result
