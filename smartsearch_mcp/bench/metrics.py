"""Metric functions: pure, no I/O, tested on hand-computed cases.

Gold-evidence recall of one question is the share of its gold turns that have at least part
of their text in what a system returned; a benchmark's recall is the mean over questions
that have gold evidence (questions without any are excluded and counted).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

SMARTSEARCH = "smartsearch"
SMARTSEARCH_FIXED = "smartsearch-fixed"  # the same ranking, the budget filled (alpha 0)
ALPHA_PREFIX = "smartsearch@alpha="  # the same ranking cut at another threshold
BM25 = "bm25"
FULL_CONTEXT = "full-context"
OVERALL = "overall"


def evidence_recall(gold: Collection[int], found: Iterable[int]) -> float | None:
    """|gold ∩ found| / |gold|, or None when there is no gold to find."""
    if not gold:
        return None
    gold_set = set(gold)
    return len(gold_set.intersection(found)) / len(gold_set)


def word_count(text: str) -> int:
    """Whitespace-separated words: the paper's budget unit."""
    return len(text.split())


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the values that are not None; None when there are none."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) with linear interpolation between closest ranks (numpy's
    default); None for no values."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    if low == high:
        return float(ordered[low])
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


def latency_summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50, p95, mean and count of latencies (milliseconds)."""
    return {
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "mean": mean(values),
        "n": len(values),
    }


def ordered_categories(outcomes: Iterable[Mapping[str, Any]], order: Sequence[str]) -> list[str]:
    """The categories present in `outcomes`, in `order` first, then by first appearance."""
    present: dict[str, None] = {}
    for outcome in outcomes:
        present.setdefault(str(outcome["category"]), None)
    known = [c for c in order if c in present]
    return known + [c for c in present if c not in known]


def summarize(
    outcomes: Sequence[Mapping[str, Any]],
    budgets: Sequence[int],
    category_order: Sequence[str] = (),
) -> dict[str, Any]:
    """Aggregate per-question outcomes (as written to results.json) per category and overall.

    Returns {"categories", "questions", "excluded_no_gold", "recall": {system: {budget:
    {category: mean}}}, "found_any" (the same shape: the share of questions with gold of
    which at least one gold turn was returned), "candidate_recall", "tokens", "words",
    "full_context_tokens", "token_ratio", "latency_ms", "qa"}; budget keys are strings, as
    in JSON.
    """
    categories = ordered_categories(outcomes, category_order)
    groups: dict[str, list[Mapping[str, Any]]] = {c: [] for c in categories}
    for outcome in outcomes:
        groups[str(outcome["category"])].append(outcome)
    groups[OVERALL] = list(outcomes)
    keys = [*categories, OVERALL]

    systems = sorted({name for o in outcomes for name in o.get("systems", {})}, key=_system_key)
    recall: dict[str, dict[str, dict[str, float | None]]] = {}
    found_any: dict[str, dict[str, dict[str, float | None]]] = {}
    tokens: dict[str, dict[str, float | None]] = {}
    words: dict[str, dict[str, float | None]] = {}
    ratio: dict[str, dict[str, float | None]] = {}
    for system in systems:
        budget_keys = ["all"] if system == FULL_CONTEXT else [str(b) for b in budgets]
        recall[system], found_any[system] = {}, {}
        tokens[system], words[system], ratio[system] = {}, {}, {}
        for budget in budget_keys:
            recall[system][budget] = {
                key: mean(_at(o, system, budget, "recall") for o in groups[key]) for key in keys
            }
            found_any[system][budget] = {
                key: mean(_found_any(o, system, budget) for o in groups[key]) for key in keys
            }
            tokens[system][budget] = mean(_at(o, system, budget, "tokens") for o in outcomes)
            words[system][budget] = mean(_at(o, system, budget, "words") for o in outcomes)
            ratio[system][budget] = mean(
                _ratio(_at(o, system, budget, "tokens"), o.get("full_context_tokens"))
                for o in outcomes
            )

    stages = sorted({stage for o in outcomes for stage in o.get("latency_ms", {})})
    latency = {
        stage: latency_summary(
            [float(o["latency_ms"][stage]) for o in outcomes if stage in o.get("latency_ms", {})]
        )
        for stage in stages
    }
    qa_outcomes = [o for o in outcomes if o.get("qa")]
    qa = None
    if qa_outcomes:
        qa = {
            key: {
                "accuracy": mean(
                    1.0 if o["qa"]["correct"] else 0.0 for o in groups[key] if o.get("qa")
                ),
                "n": sum(1 for o in groups[key] if o.get("qa")),
            }
            for key in keys
        }
    return {
        "categories": categories,
        "questions": {key: len(groups[key]) for key in keys},
        "with_gold": {key: sum(1 for o in groups[key] if o.get("gold")) for key in keys},
        "excluded_no_gold": {key: sum(1 for o in groups[key] if not o.get("gold")) for key in keys},
        "recall": recall,
        "found_any": found_any,
        "candidate_recall": {
            key: mean(o.get("candidate_recall") for o in groups[key]) for key in keys
        },
        "candidates": mean(o.get("candidates") for o in outcomes),
        **first_pass_summary(outcomes, groups, keys),
        "tokens": tokens,
        "words": words,
        "full_context_tokens": mean(o.get("full_context_tokens") for o in outcomes),
        "token_ratio": ratio,
        "latency_ms": latency,
        "qa": qa,
    }


def summarize_halves(
    outcomes: Sequence[Mapping[str, Any]],
    budgets: Sequence[int],
    category_order: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """`summarize` of each half's outcomes (their `half`: the split by conversation), halves
    in name order; empty when no outcome names a half."""
    halves = sorted({str(o["half"]) for o in outcomes if o.get("half") is not None})
    return {
        half: summarize([o for o in outcomes if o.get("half") == half], budgets, category_order)
        for half in halves
    }


def first_pass_summary(
    outcomes: Sequence[Mapping[str, Any]],
    groups: Mapping[str, Sequence[Mapping[str, Any]]],
    keys: Sequence[str],
) -> dict[str, Any]:
    """What a cascade's first pass keeps of the gold evidence at each cut N (the outcomes'
    `first_pass_found`): `first_pass_recall` {N: {category: mean recall}}, comparable with
    `candidate_recall`, and `first_pass_survival` {N: the share of the gold turns found among
    the candidates that are among the first pass's best N, over all questions}; empty when
    no cut was measured."""
    cuts = sorted({c for o in outcomes for c in o.get("first_pass_found") or {}}, key=int)
    if not cuts:
        return {}
    recall = {
        cut: {
            key: mean(
                evidence_recall(o["gold"], o["first_pass_found"][cut])
                for o in groups[key]
                if cut in (o.get("first_pass_found") or {})
            )
            for key in keys
        }
        for cut in cuts
    }
    among = sum(len(o.get("candidate_found") or []) for o in outcomes if o.get("first_pass_found"))
    survival = {
        cut: (
            sum(len(o["first_pass_found"][cut]) for o in outcomes if o.get("first_pass_found"))
            / among
            if among
            else None
        )
        for cut in cuts
    }
    return {"first_pass_recall": recall, "first_pass_survival": survival}


def _system_key(name: str) -> tuple[int, str]:
    order = {SMARTSEARCH: 0, SMARTSEARCH_FIXED: 1, BM25: 2, FULL_CONTEXT: 3}
    return (order.get(name, 3), name)


def _at(outcome: Mapping[str, Any], system: str, budget: str, field: str) -> float | None:
    value = outcome.get("systems", {}).get(system, {}).get(budget, {}).get(field)
    return None if value is None else float(value)


def _found_any(outcome: Mapping[str, Any], system: str, budget: str) -> float | None:
    """1.0 when a system returned at least one of the question's gold turns, 0.0 when none,
    None when the question has no gold or the system did not run."""
    if not outcome.get("gold"):
        return None
    entry = outcome.get("systems", {}).get(system, {}).get(budget)
    if entry is None or "found" not in entry:
        return None
    return 1.0 if entry["found"] else 0.0


def _ratio(part: float | None, whole: float | None) -> float | None:
    if part is None or not whole:
        return None
    return part / whole
