"""What the recall stages are made of, by name: the candidate channels of stage 2, the rankers
of stage 4 and the adjustments after fusion, each with the properties the pipeline and the
configuration read from it — one registry per kind instead of constants spread over the
modules that use them. Data only: the configuration validates names against it, the pipeline
(`pipeline/`) implements each entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

ModelKind = Literal["cross_encoder", "colbert", "bi_encoder", "splade"]


@dataclass(frozen=True)
class RankerSpec:
    """A stage-4 ranker: one score per candidate, fused with the others."""

    name: str
    # The model it needs loaded (None: it reads what retrieval computed).
    model: ModelKind | None
    # "per_candidate": a transformer pass over each candidate's text (a cascade,
    # rank.expensive_candidates, runs it on the first pass's best only); "stored": it reads
    # stored vectors or scores.
    cost: Literal["per_candidate", "stored"]
    # The model's own score of the passage (else a score derived from one: the context).
    learned: bool = False
    # A prior rather than evidence of relevance: no say in the confidence, and it cannot
    # order candidates alone (the speaker flag is 1 for every turn of the named person).
    prior: bool = False
    # What a passage it never saw scores, for the confidence: a lexical ranker gives 0 to
    # every passage it did not retrieve; None: the weakest candidate's score (similarities).
    floor: float | None = None


RANKERS: Mapping[str, RankerSpec] = {
    spec.name: spec
    for spec in (
        RankerSpec("cross_encoder", "cross_encoder", "per_candidate", learned=True),
        RankerSpec("colbert", "colbert", "per_candidate", learned=True),
        RankerSpec("bi_encoder", "bi_encoder", "stored", learned=True),
        RankerSpec("splade", "splade", "stored", learned=True),
        # the bi-encoder on the passage with the turn before it
        RankerSpec("context", "bi_encoder", "stored"),
        RankerSpec("bm25", None, "stored", floor=0.0),
        RankerSpec("lexical", None, "stored", floor=0.0),
        RankerSpec("speaker", None, "stored", prior=True),
    )
}
RANKER_NAMES = tuple(RANKERS)
LEARNED_RANKERS = tuple(name for name, spec in RANKERS.items() if spec.learned)
EXPENSIVE_RANKERS = tuple(name for name, spec in RANKERS.items() if spec.cost == "per_candidate")
FIRST_PASS_RANKERS = tuple(name for name in RANKERS if name not in EXPENSIVE_RANKERS)
PRIOR_RANKERS = frozenset(name for name, spec in RANKERS.items() if spec.prior)
# What recall ranks with while the models load.
MODEL_FREE_RANKERS = frozenset(name for name, spec in RANKERS.items() if spec.model is None)
RANKER_FLOORS: Mapping[str, float] = {
    name: spec.floor for name, spec in RANKERS.items() if spec.floor is not None
}


@dataclass(frozen=True)
class ChannelSpec:
    """A stage-2 candidate channel: one score per passage of the scope; its best `quota`
    passages become candidates, and the channels' fusion fills the rest."""

    name: str
    quota: str  # the retrieval.* setting of how many candidates it contributes
    # Fills its quota only and takes no part in the fusion that fills the rest: the date
    # channel orders passages by when they were said, not by what they say, and in the
    # fusion it would raise every passage inside the range (see pipeline/dated.py).
    quota_only: bool = False


CHANNELS: Mapping[str, ChannelSpec] = {
    spec.name: spec
    for spec in (
        ChannelSpec("lexical", "lexical_candidates"),  # the NER-weighted grep score
        ChannelSpec("bm25", "bm25_candidates"),  # FTS5 BM25 of the passage's turn
        ChannelSpec("dense", "dense_candidates"),  # the bi-encoder on the passage
        ChannelSpec("context", "dense_candidates"),  # ... on the passage and the turn before
        # the best of those two over the turns of someone the question names
        ChannelSpec("speaker_dense", "speaker_candidates"),
        ChannelSpec("splade", "splade_candidates"),
        ChannelSpec("date", "date_candidates", quota_only=True),
    )
}
QUOTA_ONLY_CHANNELS = frozenset(name for name, spec in CHANNELS.items() if spec.quota_only)


@dataclass(frozen=True)
class AdjustmentSpec:
    """A change of the fused ranking, `list[Scored] -> list[Scored]`, run when the preset
    lists it (`rank.adjust`, in that order)."""

    name: str
    # "fusion": after each fusion (a cascade's first pass too), on the confidence fusion
    # gives; "final": once, on the final ranking (after a cascade's head and rest are joined).
    stage: Literal["fusion", "final"]
    # The rank.* settings it reads (the first is its strength, where it has one).
    settings: tuple[str, ...] = ()


ADJUSTMENTS: Mapping[str, AdjustmentSpec] = {
    spec.name: spec
    for spec in (
        AdjustmentSpec("session_support", "fusion", ("session_weight", "session_top")),
        AdjustmentSpec("burst_credit", "fusion", ("burst_credit",)),
        AdjustmentSpec("reply_credit", "fusion", ("reply_credit",)),
        AdjustmentSpec("echo_discount", "fusion", ("echo_discount",)),
        AdjustmentSpec("slice_discount", "fusion", ("slice_discount",)),
        AdjustmentSpec("time_range", "final"),
        AdjustmentSpec("asked_value", "final"),
        AdjustmentSpec(
            "current_facts",
            "final",
            (
                "supersede",
                "supersede_needs_change",
                "supersede_same_speaker",
                "supersede_confidence",
            ),
        ),
    )
}
ADJUSTMENT_NAMES = tuple(ADJUSTMENTS)
