"""Stage 5: score-adaptive truncation of ranked passages to a token budget."""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from smartsearch_mcp.config import TruncationConfig
from smartsearch_mcp.pipeline.analyze import QueryAnalysis
from smartsearch_mcp.pipeline.explain import Tracer, explain_cut
from smartsearch_mcp.pipeline.rank import ranking_confidence
from smartsearch_mcp.pipeline.render import RenderedCost
from smartsearch_mcp.tokens import TokenCounter
from smartsearch_mcp.types import Candidate, CutExplanation, Hop, Passage, RecallResult, Scored

TruncationReason = Literal["budget", "top_k", "threshold", "exhausted"]

_WORD_END_RE = re.compile(r"\S(?=\s|$)")


@dataclass(frozen=True)
class Ranking:
    """Stages 1–4 for one query: every candidate, scored and sorted best first."""

    query: str
    analysis: QueryAnalysis
    scored: list[Scored]
    candidates: list[Candidate]
    rankers: list[str]
    warnings: list[str]
    hops: list[Hop] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    trace: Tracer | None = None  # what the stages did, when the recall is explained


@dataclass(frozen=True, slots=True)
class Truncation:
    """What fitted. `tokens_used` is what the kept passages cost: the tokens of the whole
    rendered recall text (see `RenderedCost`). `score_at_cut` is the score (the confidence,
    when truncation used one) of the best passage left out wholly (None when none was).
    `reason` says what limited the result:

    - "budget": a passage was skipped or cut short because it did not fit the token budget;
    - "top_k": `top_k` passages were kept and more remained;
    - "threshold": the next passage scored below alpha x best;
    - "exhausted": every passage was kept.

    `clipped`: the best passage alone exceeded the budget and was cut at a word boundary.
    """

    kept: list[Scored]
    tokens_used: int
    score_at_cut: float | None
    reason: TruncationReason
    clipped: bool = False


def truncate_to_budget(
    scored: Sequence[Scored],
    max_tokens: int,
    counter: TokenCounter,
    top_k: int,
    alpha: float,
    min_passages: int = 1,
    *,
    cost: RenderedCost,
    confidence: Sequence[float] | None = None,
) -> Truncation:
    """Keep the best passages that fit `max_tokens` of rendered recall text.

    `scored` must be sorted by score, best first. Passages are taken in that order while
    fewer than `top_k` are kept (`top_k` <= 0: no limit) and their threshold value is at
    least alpha x the best one. The threshold value is `confidence[i]` when given (one per
    passage, see `rank.ranking_confidence`), else the score. The relative threshold applies
    only when alpha > 0 and the best value is positive and finite (for zero or negative
    scores, such as raw logits, a ratio means nothing, so all pass); the first
    `min_passages` passages are exempt from it.

    Each passage costs what it adds to the rendered recall text (`cost`: its line, its
    session's heading) on top of the text's fixed part, so that the budget bounds what the
    agent receives. A passage that does not fit is skipped and later, shorter ones are
    still tried (greedy fill: better recall than stopping at the first misfit). If the best
    passage alone exceeds the budget it is cut at a word boundary to fit and returned alone
    (`clipped`), so a match never comes back empty unless the budget cannot hold even its
    first word or character.

    The budget is never exceeded: tokens_used <= max_tokens, unless the text's fixed part
    (its first line, multi-hop notes, warnings) alone exceeds it; then no passage is kept.
    """
    cost.reset()
    fixed = cost.fixed(max_tokens)
    if not scored:
        return Truncation([], cost.total([], max_tokens), None, "exhausted")
    values = _threshold_values(scored, confidence)
    threshold = _threshold(values[0], alpha)
    kept: list[int] = []
    used = fixed
    left_out: int | None = None  # index of the first passage left out
    over_budget = False
    stop: TruncationReason = "exhausted"
    for index, item in enumerate(scored):
        if top_k > 0 and len(kept) >= top_k:
            stop = "top_k"
            left_out = index if left_out is None else left_out
            break
        if threshold is not None and len(kept) >= min_passages and not values[index] >= threshold:
            stop = "threshold"
            left_out = index if left_out is None else left_out
            break
        price = cost.cost(item)
        if used + price <= max_tokens:
            kept.append(index)
            cost.add(item)
            used += price
            continue
        over_budget = True
        if index == 0:
            room = max_tokens - used - (price - _text_tokens(item, counter))
            shorter = _clip(item, room, counter)
            if shorter is not None:
                return _checked([shorter], scored, values, 1, max_tokens, cost, "budget", True)
        left_out = index if left_out is None else left_out
    reason: TruncationReason = "budget" if over_budget else stop
    items = [scored[i] for i in kept]
    return _checked(items, scored, values, left_out, max_tokens, cost, reason, False)


def truncate_ranking(
    ranking: Ranking,
    max_tokens: int,
    cfg: TruncationConfig,
    counter: TokenCounter,
    alpha: float | None = None,
) -> RecallResult:
    """A ranking cut to `max_tokens` as recall returns it (`truncate_to_budget` priced by the
    rendered text, with the settings of `cfg`; CPU-bound: counts the candidates' tokens).
    `alpha` replaces `cfg.alpha` (benchmarks compare thresholds on one ranking; 0: fill the
    budget)."""
    started = time.perf_counter()
    # top_k is meant for the default budget; a larger budget may keep proportionally more.
    top_k = cfg.top_k
    if top_k > 0 and max_tokens > cfg.max_tokens:
        top_k = math.ceil(top_k * max_tokens / cfg.max_tokens)
    confidence = ranking_confidence(ranking.scored)
    # The threshold is for the default budget: a caller asking for more than that asks for
    # more context, and gets the budget filled (measured: LoCoMo at 6,000 tokens lost 2.4
    # points with the threshold even scaled down).
    alpha = (cfg.alpha if alpha is None else alpha) if max_tokens <= cfg.max_tokens else 0.0
    warnings = list(ranking.warnings)

    def cut_with(notes: list[str]) -> Truncation:
        cost = RenderedCost(counter, ranking.query, ranking.hops, notes)
        return truncate_to_budget(
            ranking.scored,
            max_tokens,
            counter,
            top_k=top_k,
            alpha=alpha,
            min_passages=cfg.min_passages,
            confidence=confidence,
            cost=cost,
        )

    cut = cut_with(warnings)
    if cut.clipped:
        warnings.append(
            "the best passage alone exceeds max_tokens and was cut short; raise max_tokens to "
            "see all of it"
        )
        cut = cut_with(warnings)
    timings = dict(ranking.timings_ms)
    timings["truncate"] = (time.perf_counter() - started) * 1000
    by_item = zip(ranking.scored, confidence, strict=True)
    kept_confidence = {id(item): value for item, value in by_item}
    explanation = None
    if ranking.trace is not None:
        limits = CutExplanation(
            stop_reason=cut.reason,
            score_at_cut=cut.score_at_cut,
            threshold=_threshold(confidence[0], alpha) if confidence else None,
            alpha=alpha,
            top_k=top_k,
            max_tokens=max_tokens,
            tokens_used=cut.tokens_used,
            ranked=len(ranking.scored),
            kept=len(cut.kept),
        )
        time_range = ranking.analysis.time_range
        explanation = explain_cut(
            ranking.trace, ranking.scored, confidence, cut.kept, limits, ranking.hops, time_range
        )
    return RecallResult(
        passages=cut.kept,
        tokens_used=cut.tokens_used,
        max_tokens=max_tokens,
        rankers=ranking.rankers,
        warnings=warnings,
        hops=ranking.hops,
        candidates=len(ranking.candidates),
        score_at_cut=cut.score_at_cut,
        timings_ms=timings,
        stop_reason=cut.reason,
        confidence=[kept_confidence.get(id(item), confidence[0]) for item in cut.kept],
        explanation=explanation,
    )


def _threshold_values(scored: Sequence[Scored], confidence: Sequence[float] | None) -> list[float]:
    if confidence is None:
        return [item.score for item in scored]
    if len(confidence) != len(scored):
        raise ValueError(f"{len(confidence)} confidence values for {len(scored)} passages")
    return [float(value) for value in confidence]


def _threshold(best: float, alpha: float) -> float | None:
    return alpha * best if alpha > 0 and best > 0 and math.isfinite(best) else None


def _checked(
    items: list[Scored],
    scored: Sequence[Scored],
    values: Sequence[float],
    left_out: int | None,
    max_tokens: int,
    cost: RenderedCost,
    reason: TruncationReason,
    clipped: bool,
) -> Truncation:
    """The kept passages, counted as the whole rendered text; line by line counts may be a
    token off, so the lowest ranked are dropped until the text fits."""
    total = cost.total(items, max_tokens)
    while items and total > max_tokens:
        dropped = items.pop()
        reason = "budget"
        position = next(i for i, s in enumerate(scored) if s is dropped) if not clipped else 0
        left_out = position if left_out is None else min(left_out, position)
        total = cost.total(items, max_tokens)
    at_cut = values[left_out] if left_out is not None and left_out < len(values) else None
    return Truncation(items, total, at_cut, reason, clipped and bool(items))


def _text_tokens(item: Scored, counter: TokenCounter) -> int:
    return counter.count(item.candidate.passage.text)


def _clip(item: Scored, limit: int, counter: TokenCounter) -> Scored | None:
    """`item` with its passage shortened to the longest word-boundary prefix (or, when even
    the first word is too long, character prefix) of at most `limit` tokens."""
    if limit <= 0:
        return None
    passage = item.candidate.passage
    text = passage.text
    word_ends = [m.end() for m in _WORD_END_RE.finditer(text)]
    end = _longest_fitting(word_ends, text, limit, counter)
    if end is None:
        end = _longest_fitting(range(1, len(text) + 1), text, limit, counter)
    if end is None:
        return None
    shorter = Passage(turn=passage.turn, start=passage.start, end=passage.start + end)
    candidate = dataclasses.replace(item.candidate, passage=shorter)
    return dataclasses.replace(item, candidate=candidate, ranker_scores=dict(item.ranker_scores))


def _longest_fitting(
    ends: Sequence[int], text: str, limit: int, counter: TokenCounter
) -> int | None:
    """The largest end in `ends` (ascending) whose prefix counts at most `limit` tokens,
    by binary search; only prefixes actually counted as fitting are returned."""
    low, high, found = 0, len(ends) - 1, None
    while low <= high:
        middle = (low + high) // 2
        if counter.count(text[: ends[middle]]) <= limit:
            found = ends[middle]
            low = middle + 1
        else:
            high = middle - 1
    return found
