"""Stage 4: rank. The configured scorers run in parallel worker threads (off the event loop),
then reciprocal-rank fusion combines their orderings.

With a cascade (`rank.expensive_candidates` = N > 0), the rankers that cost a model pass per
candidate (`EXPENSIVE_RANKERS`: the cross-encoder, ColBERT) score only the N best passages of
the ranking the other rankers make (`order_candidates` over their scores: the first pass);
those N are then ranked with every ranker, and the rest follow in the first pass's order
(`follow_with_rest`)."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence

import anyio
import anyio.to_thread

from smartsearch_mcp.pipeline.adjust import Context, adjust
from smartsearch_mcp.pipeline.fusion import reciprocal_rank_fusion
from smartsearch_mcp.stages import PRIOR_RANKERS, RANKER_FLOORS
from smartsearch_mcp.types import Candidate, Scored

log = logging.getLogger(__name__)

ScoreJob = Callable[[], list[float]]


async def run_scorers(
    jobs: Mapping[str, ScoreJob], limiter: anyio.CapacityLimiter
) -> tuple[dict[str, list[float]], dict[str, str], dict[str, float]]:
    """Run each job in a worker thread, at most `limiter` at once.

    Returns (scores by ranker, errors by ranker, milliseconds by ranker). A ranker that
    raises is reported, not fatal: recall goes on with the others.
    """
    scores: dict[str, list[float]] = {}
    errors: dict[str, str] = {}
    timings: dict[str, float] = {}

    async def run(name: str, job: ScoreJob) -> None:
        started = time.perf_counter()
        try:
            scores[name] = await anyio.to_thread.run_sync(job, limiter=limiter)
        except Exception as exc:  # a ranker failing must not fail recall; it is reported
            log.warning("ranker %s failed: %s", name, exc, exc_info=True)
            errors[name] = f"{type(exc).__name__}: {exc}"
        timings[name] = (time.perf_counter() - started) * 1000

    async with anyio.create_task_group() as group:
        for name, job in jobs.items():
            group.start_soon(run, name, job)
    return scores, errors, timings


def fuse(
    candidates: Sequence[Candidate],
    scores: Mapping[str, Sequence[float]],
    rrf_k: int,
    weights: Mapping[str, float],
) -> list[Scored]:
    """Candidates sorted by fused score (`reciprocal_rank_fusion`; ties keep candidate
    order), each with its raw per-ranker scores."""
    names = sorted(scores)
    if not names:
        fused = [c.lexical_score for c in candidates]
    elif len(names) == 1:
        # One ranker: its own scores are more informative than a rank transform (NaN, a
        # passage the ranker could not score, sorts last).
        fused = [-math.inf if math.isnan(v) else float(v) for v in scores[names[0]]]
    else:
        fused = reciprocal_rank_fusion({n: scores[n] for n in names}, k=rrf_k, weights=weights)
    scored = [
        Scored(
            candidate=c,
            score=float(fused[i]),
            ranker_scores={n: float(scores[n][i]) for n in names},
        )
        for i, c in enumerate(candidates)
    ]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].score, i))
    return [scored[i] for i in order]


def follow_with_rest(head: Sequence[Scored], first_pass: Sequence[Scored]) -> list[Scored]:
    """A cascade's final order: `head` (the first pass's best passages, ranked again with
    every ranker), then the other passages of `first_pass` in its order, with their first-pass
    scores and confidence. Their scores are shifted down by one amount so that none is above
    the head's lowest (scores stay sorted, their differences kept; a -inf stays -inf)."""
    taken = {item.candidate.passage.key for item in head}
    rest = [item for item in first_pass if item.candidate.passage.key not in taken]
    if not head or not rest or not math.isfinite(rest[0].score):
        return [*head, *rest]
    floor, top = head[-1].score, rest[0].score
    if top <= floor:
        return [*head, *rest]
    lowered = [dataclasses.replace(item, score=floor - (top - item.score)) for item in rest]
    return [*head, *lowered]


def ranking_confidence(
    scored: Sequence[Scored], unseen: int = 0, voters: Collection[str] = ()
) -> list[float]:
    """How sure the ranking is of each passage, in [0, 1], in `scored`'s order.

    Fused RRF scores are ranks, not confidence: every query has a first passage. Instead each
    ranker's own scores (cosine, BM25, the grep score...) are calibrated — 0 at the median
    passage of the scope, 1 at that ranker's best — and a passage is as sure as the middle
    ranker says (the median over the rankers that could score it: agreement; one ranker's
    outlier neither makes a passage sure nor unsure; a passage not embedded yet is judged by
    the others; only the rankers in `voters` when any of them scored, e.g.
    `rank.confidence_rankers`). `unseen` is how many passages of the scope are not among the
    candidates: they count in each ranker's median at that ranker's floor (`RANKER_FLOORS`),
    so that with three matching turns out of twenty the third is not "typical" merely for
    being the median of three. A precise question has one or a few passages far above the
    rest; a vague one has many alike. Without per-ranker scores the fused score is calibrated
    the same way. Passages that carry a confidence already (see `with_confidence`) keep it.
    """
    if not scored:
        return []
    if all(item.confidence is not None for item in scored):
        return [float(item.confidence) for item in scored]  # type: ignore[arg-type]
    names = sorted({n for item in scored for n in item.ranker_scores} - PRIOR_RANKERS)
    names = [n for n in names if n in voters] or names
    columns = {n: [item.ranker_scores.get(n, math.nan) for item in scored] for n in names}
    if not columns:
        columns = {"": [item.score for item in scored]}
    calibrated = [
        _above_median(column, max(0, unseen), RANKER_FLOORS.get(name))
        for name, column in columns.items()
    ]
    return [_median_of_known(values) for values in zip(*calibrated, strict=True)]


def with_confidence(
    scored: Sequence[Scored], unseen: int = 0, voters: Collection[str] = ()
) -> list[Scored]:
    """`scored` with each passage's `ranking_confidence` attached (computed once, right after
    fusion, so that later adjustments can carry it: see `credit_replied_turns`)."""
    plain = [dataclasses.replace(item, confidence=None) for item in scored]
    values = ranking_confidence(plain, unseen, voters)
    return [
        dataclasses.replace(item, confidence=value)
        for item, value in zip(scored, values, strict=True)
    ]


def _above_median(values: Sequence[float], unseen: int, floor: float | None) -> list[float]:
    """Each value's place between the median (0) and the best (1) of `values` plus `unseen`
    values at `floor` (default: the lowest of `values`), clipped; unknown (NaN) values stay
    unknown: the ranker has no say on them."""
    known = sorted(v for v in values if math.isfinite(v))
    if not known:
        return [math.nan] * len(values)
    low = known[0] if floor is None else min(floor, known[0])
    total = unseen + len(known)

    def at(k: int) -> float:  # the k-th smallest of `unseen` x low followed by `known`
        return low if k < unseen else known[k - unseen]

    median = at(total // 2) if total % 2 else (at(total // 2 - 1) + at(total // 2)) / 2
    span = known[-1] - median
    if span <= 0:
        return [(1.0 if v >= known[-1] else 0.0) if math.isfinite(v) else math.nan for v in values]
    return [
        min(1.0, max(0.0, (v - median) / span)) if math.isfinite(v) else math.nan for v in values
    ]


def _median_of_sorted(values: Sequence[float]) -> float:
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def _median_of_known(values: Sequence[float]) -> float:
    """The median of the known (not NaN) values; 0 when no ranker could score the passage."""
    known = sorted(v for v in values if not math.isnan(v))
    return _median_of_sorted(known) if known else 0.0


def first_pass(
    candidates: Sequence[Candidate],
    scores: Mapping[str, Sequence[float]],
    context: Context,
    unseen: int = 0,
) -> list[Scored]:
    """A cascade's first pass: the candidates ranked (`order_candidates`) by the first pass's
    rankers among `scores` (`rank.first_pass_rankers()`: never the expensive ones), joined by
    the lexical scores when it lists them or when nothing else could order the candidates
    (the speaker prior alone cannot)."""
    names = context.rank.first_pass_rankers()
    cheap = {name: values for name, values in scores.items() if name in names}
    if "lexical" in names or not set(cheap) - PRIOR_RANKERS:
        cheap["lexical"] = [c.lexical_score for c in candidates]
    return order_candidates(candidates, cheap, context, unseen, phase="first_pass")


def order_candidates(
    candidates: Sequence[Candidate],
    scores: Mapping[str, Sequence[float]],
    context: Context,
    unseen: int = 0,
    phase: str = "fusion",
) -> list[Scored]:
    """The candidates best first: the rankers' `scores` fused (`fuse`, weighted by
    `rank.weights`) with their confidence (`with_confidence`; `unseen`: passages of the
    scope that are not candidates), then the adjustments of the "fusion" stage that
    `rank.adjust` lists (`pipeline.adjust`). An explained recall's `context.trace` records
    the fusion and the adjustments under `phase` ("fusion", or a cascade's "first_pass")."""
    rank = context.rank
    weights = {name: rank.weights.get(name, 1.0) for name in scores}
    fused = fuse(candidates, scores, rank.rrf_k, weights)
    fused = with_confidence(fused, unseen, rank.confidence_rankers)
    if context.trace is not None:
        keys = [c.passage.key for c in candidates]
        context.trace.fusion(phase, fused, scores, keys)
    return adjust(fused, "fusion", context, phase)
