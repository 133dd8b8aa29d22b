"""`bench compare BEFORE AFTER`: whether a change helped, hurt, or did neither, question by
question.

Two runs of one benchmark (before and after a change: a ranker added, an adjustment off) are
paired by question id. For each budget: both means, their difference, and a 95 % interval of
that difference from a paired bootstrap that resamples whole conversations (the haystacks),
then questions within each — questions of one conversation share its quirks, so resampling
questions alone would claim more certainty than the data holds. A change "helps" (or "hurts")
only when the whole interval is above (below) zero; otherwise the sets say nothing clear.

This is how a pipeline part earns its place: a part that hurts one kind of memory beyond
doubt is made conditional or removed; a small difference inside the interval is noise.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from smartsearch_mcp.types import InputError

SAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Difference:
    """One budget's paired comparison (recall, after − before)."""

    budget: str
    questions: int
    conversations: int
    before: float
    after: float
    low: float
    high: float
    better: int  # questions whose recall went up
    worse: int

    @property
    def mean(self) -> float:
        return self.after - self.before

    @property
    def verdict(self) -> str:
        if self.low > 0:
            return "helps"
        if self.high < 0:
            return "hurts"
        return "no clear difference"


def compare_runs(
    before: dict[str, Any],
    after: dict[str, Any],
    system: str = "smartsearch",
    half: str | None = None,
    samples: int = SAMPLES,
    seed: int = 0,
) -> list[Difference]:
    """The paired comparison of two results (`load_results`) of one benchmark, per budget,
    over the questions both scored (of `half` only, when given)."""
    if before.get("bench") != after.get("bench"):
        raise InputError(
            f"these runs are of different benchmarks ({before.get('bench')} and "
            f"{after.get('bench')}): compare two runs of one"
        )
    if samples < 100:
        raise InputError(f"--samples {samples}: at least 100 resamples are needed")
    first, second = _scored(before, system, half), _scored(after, system, half)
    shared = sorted(first.keys() & second.keys())
    if not shared:
        which = f" of half {half}" if half else ""
        raise InputError(f"the two runs share no question{which} scored by {system!r}")
    budgets = [b for b in first[shared[0]][1] if all(b in second[q][1] for q in shared)]
    rng = random.Random(seed)
    return [_difference(budget, shared, first, second, samples, rng) for budget in budgets]


def _scored(
    data: dict[str, Any], system: str, half: str | None
) -> dict[str, tuple[str, dict[str, float]]]:
    """question id -> (its conversation, {budget: recall}) for the questions `system`
    scored (those with gold evidence)."""
    scored = {}
    for question in data.get("questions") or []:
        if half is not None and question.get("half") != half:
            continue
        runs = (question.get("systems") or {}).get(system)
        if not runs:
            continue
        recalls = {
            budget: float(run["recall"])
            for budget, run in runs.items()
            if isinstance(run, dict) and run.get("recall") is not None
        }
        if recalls:
            scored[str(question["id"])] = (str(question.get("haystack")), recalls)
    return scored


def _difference(
    budget: str,
    shared: list[str],
    before: dict[str, tuple[str, dict[str, float]]],
    after: dict[str, tuple[str, dict[str, float]]],
    samples: int,
    rng: random.Random,
) -> Difference:
    by_conversation: dict[str, list[float]] = defaultdict(list)
    for question in shared:
        by_conversation[before[question][0]].append(
            after[question][1][budget] - before[question][1][budget]
        )
    groups = list(by_conversation.values())
    means = []
    for _ in range(samples):
        total, count = 0.0, 0
        for group in rng.choices(groups, k=len(groups)):
            total += sum(rng.choices(group, k=len(group)))
            count += len(group)
        means.append(total / count)
    means.sort()
    tail = (1 - LEVEL) / 2
    changes = [change for group in groups for change in group]
    return Difference(
        budget=budget,
        questions=len(shared),
        conversations=len(groups),
        before=statistics.fmean(before[q][1][budget] for q in shared),
        after=statistics.fmean(after[q][1][budget] for q in shared),
        low=means[int(tail * samples)],
        high=means[min(samples - 1, int((1 - tail) * samples))],
        better=sum(change > 0 for change in changes),
        worse=sum(change < 0 for change in changes),
    )


def format_comparison(
    differences: list[Difference], before: str, after: str, half: str | None, samples: int
) -> str:
    """The comparison as a markdown table."""
    head = differences[0]
    scope = f"half {half}, " if half else ""
    lines = [
        f"Before: `{before}`; after: `{after}` ({scope}{head.questions} questions in "
        f"{head.conversations} conversations, paired; {LEVEL:.0%} interval of the difference "
        f"from {samples:,} resamples of conversations, then of their questions).",
        "",
        "| budget | before | after | difference | 95 % interval | questions up / down | verdict |",
        "|---:|---:|---:|---:|---|---:|---|",
    ]
    for d in differences:
        lines.append(
            f"| {int(d.budget):,} | {d.before:.3f} | {d.after:.3f} | {d.mean:+.3f} | "
            f"{d.low:+.3f} to {d.high:+.3f} | {d.better} / {d.worse} | {d.verdict} |"
        )
    return "\n".join(lines)


__all__ = ["Difference", "compare_runs", "format_comparison"]
