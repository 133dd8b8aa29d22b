"""The rank stage's cascade (`rank.expensive_candidates`): the cheap rankers rank every
candidate first; only the best N of that first pass reach the cross-encoder and ColBERT
(tiny local models); those N come first, ranked with every ranker, and the rest follow in
the first pass's order; truncation and confidence work on the whole list."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from given_models import GivenModels
from tiny_models import TinyModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ColbertScorer, CrossEncoderScorer, ModelLocation
from smartsearch_mcp.pipeline.adjust import Context
from smartsearch_mcp.pipeline.rank import order_candidates
from smartsearch_mcp.pipeline.recall import Ranking, RecallPipeline
from smartsearch_mcp.pipeline.token_vectors import model_key
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))
QUERY = "garden tomatoes"
# Every turn matches the query lexically (so all are candidates), to different degrees.
TURNS = [
    TurnInput(text, speaker)
    for text, speaker in [
        ("The garden is full of tomatoes, garden tomatoes everywhere.", "Ann"),
        ("We planted tomatoes in the garden on Sunday.", "Bo"),
        ("My garden needs rain.", "Ann"),
        ("Tomatoes are expensive at the market this week.", "Bo"),
        ("The community garden opens at nine.", "Ann"),
        ("I made a sauce from the tomatoes.", "Bo"),
        ("Her garden has roses and a pond.", "Ann"),
        ("A garden party with friends and music.", "Bo"),
        ("Green tomatoes ripen on the windowsill.", "Ann"),
        ("The garden shed fell over in the storm.", "Bo"),
    ]
]


class Recording:
    """A scorer that records the texts it was asked to score, then scores with `scorer`."""

    def __init__(self, scorer: Any) -> None:
        self.scorer = scorer
        self.seen: list[list[str]] = []

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.seen.append(list(texts))
        return self.scorer.score(query, texts)


class KeywordScorer:
    """Scores by how often `keyword` occurs (a deterministic stand-in for a cross-encoder)."""

    def __init__(self, keyword: str) -> None:
        self.keyword = keyword

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(t.lower().count(self.keyword)) for t in texts]


class FailingScorer:
    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("boom")


def _config(scorers: Sequence[str], cut: int, **rank: Any) -> Config:
    return Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False},
        expansion={"enabled": False},
        rank={"scorers": list(scorers), "expensive_candidates": cut, **rank},
    )


@pytest.fixture
async def store(tmp_path: Path) -> Any:
    s = await SQLiteStore.open(tmp_path / "memory.db")
    await s.remember("ns", "s1", TURNS)
    yield s
    await s.close()


@pytest.fixture(scope="module")
def tiny(tiny_models: TinyModels) -> dict[str, Any]:
    def at(path: Path) -> ModelLocation:
        return ModelLocation(str(path), str(path), "directory")

    return {
        "cross_encoder": CrossEncoderScorer.load(at(tiny_models.bert), batch_size=4),
        "colbert": ColbertScorer.load(at(tiny_models.colbert), batch_size=4),
    }


async def _rank(store: SQLiteStore, config: Config, scorers: dict[str, Any]) -> Ranking:
    return await RecallPipeline(store, config, GivenModels(scorers)).rank(QUERY, SCOPE)  # type: ignore[arg-type]


def _texts(ranking: Ranking) -> list[str]:
    return [s.candidate.passage.text for s in ranking.scored]


async def test_only_the_first_passs_best_n_reach_the_cross_encoder_and_colbert(
    store: SQLiteStore, tiny: dict[str, Any]
) -> None:
    cross = Recording(tiny["cross_encoder"])
    scorers = {"cross_encoder": cross, "colbert": tiny["colbert"]}
    pipeline = RecallPipeline(
        store,
        _config(["cross_encoder", "colbert", "lexical"], 4),
        GivenModels(scorers),  # type: ignore[arg-type]
    )
    ranking = await pipeline.rank(QUERY, SCOPE)
    first_pass = await _rank(store, _config(["lexical"], 0), {})

    assert len(ranking.candidates) == len(TURNS)
    assert ranking.rankers == ["colbert", "cross_encoder", "lexical"], ranking.warnings
    best_four = set(_texts(first_pass)[:4])
    assert len(cross.seen) == 1
    assert {t.partition(": ")[2] for t in cross.seen[0]} == best_four  # "Ann: ..."
    colbert_scored = [
        s for s in ranking.scored if not math.isnan(s.ranker_scores.get("colbert", math.nan))
    ]
    assert {s.candidate.passage.text for s in colbert_scored} == best_four
    # ColBERT encoded (and keeps for the background) the four passages only
    assert len(pipeline.token_vectors.pending[model_key(tiny["colbert"])]) == 4


async def test_the_n_come_first_ranked_by_every_ranker_and_the_rest_follow_the_first_pass(
    store: SQLiteStore,
) -> None:
    scorers = {"cross_encoder": KeywordScorer("tomatoes")}
    ranking = await _rank(store, _config(["cross_encoder", "lexical"], 5), scorers)
    first_pass = _texts(await _rank(store, _config(["lexical"], 0), {}))
    everything = await _rank(store, _config(["cross_encoder", "lexical"], 0), scorers)

    texts = _texts(ranking)
    assert set(texts[:5]) == set(first_pass[:5])
    assert texts[5:] == [t for t in first_pass if t not in texts[:5]]
    head = ranking.scored[:5]
    assert all("cross_encoder" in s.ranker_scores for s in head)
    assert not any("cross_encoder" in s.ranker_scores for s in ranking.scored[5:])
    # the head is ordered by the fusion of both rankers over those five
    fused = order_candidates(
        [s.candidate for s in head],
        {name: [s.ranker_scores[name] for s in head] for name in ("cross_encoder", "lexical")},
        Context(_config(["cross_encoder", "lexical"], 5).rank),
    )
    assert [s.candidate.passage.key for s in fused] == [s.candidate.passage.key for s in head]
    assert head[0].ranker_scores["cross_encoder"] == max(
        s.ranker_scores["cross_encoder"] for s in head
    )
    # scores stay sorted best first over the whole list; every passage has a confidence
    scores = [s.score for s in ranking.scored]
    assert scores == sorted(scores, reverse=True)
    assert all(s.confidence is not None and 0 <= s.confidence <= 1 for s in ranking.scored)
    # without the cascade the cross-encoder sees every candidate
    assert all("cross_encoder" in s.ranker_scores for s in everything.scored)


async def test_a_cut_at_or_above_the_candidates_or_zero_ranks_as_without_a_cascade(
    store: SQLiteStore,
) -> None:
    scorers = {"cross_encoder": KeywordScorer("tomatoes")}
    rankers = ["cross_encoder", "lexical"]
    off = await _rank(store, _config(rankers, 0), scorers)

    for cut in (len(TURNS), 500):
        same = await _rank(store, _config(rankers, cut), scorers)
        assert [(s.candidate.passage.key, s.score) for s in same.scored] == [
            (s.candidate.passage.key, s.score) for s in off.scored
        ]


async def test_when_the_expensive_rankers_fail_the_first_pass_is_the_ranking(
    store: SQLiteStore,
) -> None:
    ranking = await _rank(
        store, _config(["cross_encoder", "lexical"], 3), {"cross_encoder": FailingScorer()}
    )
    first_pass = await _rank(store, _config(["lexical"], 0), {})

    assert _texts(ranking) == _texts(first_pass)
    assert ranking.rankers == ["lexical"]
    assert any("ranker cross_encoder failed" in w for w in ranking.warnings)


async def test_truncation_keeps_the_cascades_order_within_the_budget_with_confidence(
    store: SQLiteStore,
) -> None:
    scorers = {"cross_encoder": KeywordScorer("tomatoes")}
    pipeline = RecallPipeline(store, _config(["cross_encoder", "lexical"], 3), GivenModels(scorers))  # type: ignore[arg-type]
    ranking = await pipeline.rank(QUERY, SCOPE)

    whole = pipeline.truncate(ranking, 10_000, alpha=0.0)  # room for all: head, then rest
    small = pipeline.truncate(ranking, 150)

    assert [s.candidate.passage.key for s in whole.passages] == [
        s.candidate.passage.key for s in ranking.scored
    ]
    assert len(whole.confidence) == len(whole.passages)
    assert small.tokens_used <= 150 and 0 < len(small.passages) < len(ranking.scored)
    assert small.passages[0].candidate.passage.key == ranking.scored[0].candidate.passage.key


async def test_a_first_pass_of_its_own_chooses_the_n_and_the_final_fusion_is_the_scorers(
    store: SQLiteStore,
) -> None:
    cross = Recording(KeywordScorer("tomatoes"))
    config = _config(["cross_encoder", "lexical"], 3, first_pass=["bm25"])
    ranking = await _rank(store, config, {"cross_encoder": cross})
    by_bm25 = _texts(await _rank(store, _config(["bm25"], 0), {}))

    assert {t.partition(": ")[2] for t in cross.seen[0]} == set(by_bm25[:3])
    assert ranking.rankers == ["cross_encoder", "lexical"]  # BM25 only chose the three
    assert all(set(s.ranker_scores) == {"cross_encoder", "lexical"} for s in ranking.scored[:3])
    assert _texts(ranking)[3:] == [t for t in by_bm25 if t not in _texts(ranking)[:3]]


async def test_when_the_expensive_rankers_fail_a_first_pass_of_its_own_ranks_and_is_named(
    store: SQLiteStore,
) -> None:
    config = _config(["cross_encoder", "lexical"], 3, first_pass=["bm25", "lexical"])
    ranking = await _rank(store, config, {"cross_encoder": FailingScorer()})

    assert ranking.rankers == ["bm25", "lexical"]
    assert all(set(s.ranker_scores) == {"bm25", "lexical"} for s in ranking.scored)
