"""Why recall returned what it did: a trace the ranking stages write as they run, when a
recall is explained (`recall(..., explain=True)`), and the per-passage explanation built from
it once the ranking is cut.

Nothing here recomputes a stage: fusion records each ranker's rank and score and the fused
score it computed (`Tracer.fused`), every adjustment the scores before and after it
(`Tracer.adjusted`), and truncation where it cut (`explain_cut`). A recall that is not
explained carries no tracer and pays nothing for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from smartsearch_mcp.dates import DateRange
from smartsearch_mcp.pipeline.dated import windows_of
from smartsearch_mcp.pipeline.fusion import competition_ranks
from smartsearch_mcp.types import (
    AdjustmentStep,
    CutExplanation,
    DateWindow,
    Hop,
    PassageExplanation,
    RankerRank,
    RecallExplanation,
    Scored,
)

# How many of the best passages left out an explanation shows below the cut.
BELOW_CUT = 5

Key = tuple[int, int]


@dataclass
class Tracer:
    """What the ranking did to each passage (keyed by `Passage.key`), recorded by the stages
    themselves. A cascade fuses twice: the first pass's record of a passage is replaced by
    the final fusion's when that passage reaches it."""

    ranks: dict[Key, list[RankerRank]] = field(default_factory=dict)
    fused: dict[Key, float] = field(default_factory=dict)
    passes: dict[Key, str] = field(default_factory=dict)
    steps: dict[Key, list[AdjustmentStep]] = field(default_factory=dict)

    def fusion(
        self,
        phase: str,
        ranked: Sequence[Scored],
        scores: Mapping[str, Sequence[float]],
        keys: Sequence[Key],
    ) -> None:
        """One fusion (`phase`: "fusion", or a cascade's "first_pass"): each ranker's rank
        (competition ranks, as reciprocal-rank fusion read them) and raw score of the
        candidates at `keys` (in `scores`' order), and their fused scores in `ranked`."""
        ranks = {name: competition_ranks(values) for name, values in scores.items()}
        for row, key in enumerate(keys):
            self.ranks[key] = [
                RankerRank(name, ranks[name][row], float(scores[name][row]))
                for name in sorted(scores)
            ]
            self.passes[key] = phase
            self.steps[key] = [s for s in self.steps.get(key, []) if s.stage == "final"]
        for item in ranked:
            self.fused[item.candidate.passage.key] = item.score

    def adjusted(
        self, name: str, stage: str, before: Sequence[Scored], after: Sequence[Scored]
    ) -> None:
        """One adjustment's effect: every passage whose score (or currency) it changed."""
        was = {item.candidate.passage.key: item for item in before}
        for item in after:
            key = item.candidate.passage.key
            old = was.get(key)
            if old is None:
                continue
            moved = old.score != item.score
            superseded = old.superseded_by is None and item.superseded_by is not None
            if moved or superseded:
                step = AdjustmentStep(
                    name,
                    stage,
                    old.score,
                    item.score,
                    None if item.superseded_by is None else item.superseded_by.turn_id,
                )
                self.steps.setdefault(key, []).append(step)


def explain_cut(
    tracer: Tracer,
    ranked: Sequence[Scored],
    confidence: Sequence[float],
    kept: Sequence[Scored],
    cut: CutExplanation,
    hops: Sequence[Hop],
    time_range: DateRange | None,
) -> RecallExplanation:
    """The explanation of a recall: for each kept passage (in `kept`'s order) and the best
    `BELOW_CUT` passages left out (in ranking order), what found it, how each ranker ranked
    it, its fused score, the adjustments that moved it, and where it stands against the cut."""
    position = {item.candidate.passage.key: i for i, item in enumerate(ranked)}
    inside = _date_window_rule(ranked, time_range)
    kept_keys = {item.candidate.passage.key for item in kept}

    def explained(item: Scored, kept_it: bool) -> PassageExplanation:
        key = item.candidate.passage.key
        at = position[key]
        turn = item.candidate.passage.turn
        hop_entities = [hop.entity for hop in hops if turn.id in hop.turn_ids]
        channels = list(item.candidate.sources)
        if not channels:  # added by expansion, which names no channel
            channels = ["hop"] if hop_entities else ["expansion"]
        return PassageExplanation(
            passage=item.candidate.passage,
            position=at + 1,
            kept=kept_it,
            channels=channels,
            lexical_score=item.candidate.lexical_score,
            rankers=list(tracer.ranks.get(key, [])),
            fused_score=tracer.fused.get(key),
            fusion=tracer.passes.get(key, "fusion"),
            adjustments=list(tracer.steps.get(key, [])),
            score=ranked[at].score,
            confidence=confidence[at],
            hops=hop_entities,
            in_date_window=None if inside is None else inside(item),
            superseded_by=None if item.superseded_by is None else item.superseded_by.turn_id,
        )

    below = [item for item in ranked if item.candidate.passage.key not in kept_keys]
    window = (
        None
        if time_range is None
        else DateWindow(
            time_range.expression, time_range.start.isoformat(), time_range.end.isoformat()
        )
    )
    return RecallExplanation(
        passages=[explained(item, True) for item in kept],
        below_cut=[explained(item, False) for item in below[:BELOW_CUT]],
        cut=cut,
        date_window=window,
    )


def _date_window_rule(
    ranked: Sequence[Scored], time_range: DateRange | None
) -> Callable[[Scored], bool] | None:
    """Whether a passage is in the question's date window, by the rule of the time_range
    adjustment (`dated.DateWindow.holds`, the first occurrence of the range holding any
    passage); None when the question names no dates."""
    if time_range is None:
        return None
    windows = windows_of(time_range)
    chosen = next(
        (w for w in windows if any(w.holds(item.candidate.passage) for item in ranked)),
        None,
    )
    if chosen is None:
        return lambda item: False
    return lambda item: chosen.holds(item.candidate.passage)
