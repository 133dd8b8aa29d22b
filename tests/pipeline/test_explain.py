"""An explained recall: the same answer as without, plus a trace the stages wrote as they
ran — each ranker's rank and score, the fused score, every adjustment that moved a passage,
the date window and the cut with the best passages below it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.output import format_explain, format_recall, recall_output
from smartsearch_mcp.pipeline.fusion import competition_ranks
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import RecallResult, Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))


class KeywordScorer:
    """Scores by how often `keyword` occurs in a passage."""

    def __init__(self, name: str, keyword: str) -> None:
        self.name = name
        self.keyword = keyword

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [float(t.lower().count(self.keyword)) for t in texts]


def _config(**rank: Any) -> Config:
    return Config().with_overrides(nlp={"spacy_models": []}, retrieval={"dense": False}, rank=rank)


@pytest.fixture
async def store(tmp_path):
    s = await SQLiteStore.open(tmp_path / "m.db")
    await s.remember(
        "ns",
        "s1",
        [
            TurnInput("I adopted a puppy called Biscuit.", "Ann", timestamp="2023-05-01"),
            TurnInput("Biscuit loves the beach near Porto.", "Ann", timestamp="2023-05-02"),
            TurnInput("We hiked the Alps last summer with Biscuit.", "Bo", timestamp="2023-06-10"),
            TurnInput("My sister Clara lives in Porto.", "Ann", timestamp="2023-07-01"),
            TurnInput("Clara works as a marine biologist.", "Bo", timestamp="2023-07-02"),
        ],
    )
    yield s
    await s.close()


def _without_explanation(result: RecallResult) -> RecallResult:
    timings: dict[str, float] = {}
    return dataclasses.replace(result, explanation=None, timings_ms=timings)


async def test_an_explained_recall_returns_exactly_what_the_plain_recall_returns(store):
    config = _config(scorers=["cross_encoder", "colbert"])
    models = GivenModels(
        {"cross_encoder": KeywordScorer("c", "biscuit"), "colbert": KeywordScorer("k", "porto")}
    )
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    plain = await pipeline.recall("Biscuit in Porto", SCOPE, 120)
    explained = await pipeline.recall("Biscuit in Porto", SCOPE, 120, explain=True)
    assert plain.explanation is None
    assert explained.explanation is not None
    assert _without_explanation(explained) == _without_explanation(plain)
    assert format_recall("q", explained) == format_recall("q", plain)
    plain_json = recall_output(plain).model_dump_json()
    assert "explain" not in plain_json
    assert recall_output(explained).model_dump(mode="json")["explain"]["cut"]["kept"] == len(
        plain.passages
    )


async def test_each_passage_carries_its_rankers_ranks_and_the_fused_score_fusion_computed(store):
    config = _config(scorers=["cross_encoder", "colbert"], adjust=[])
    models = GivenModels(
        {"cross_encoder": KeywordScorer("c", "biscuit"), "colbert": KeywordScorer("k", "porto")}
    )
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    result = await pipeline.recall("Biscuit in Porto", SCOPE, 2000, explain=True)
    explanation = result.explanation
    assert explanation is not None
    assert [p.passage.key for p in explanation.passages] == [
        s.candidate.passage.key for s in result.passages
    ]
    every = [*explanation.passages, *explanation.below_cut]
    for ranker in ("colbert", "cross_encoder"):
        scores = [next(r.score for r in p.rankers if r.ranker == ranker) for p in every]
        ranks = [next(r.rank for r in p.rankers if r.ranker == ranker) for p in every]
        if len(every) == result.candidates:  # every candidate shown: ranks are theirs
            assert ranks == competition_ranks(scores)
    for item in explanation.passages:
        expected = sum(1 / (config.rank.rrf_k + r.rank) for r in item.rankers)
        assert item.fused_score == pytest.approx(expected)
        assert item.score == pytest.approx(expected)  # no adjustment listed: none moved it
        assert item.adjustments == []
        assert item.channels, item
        assert item.kept
    assert [p.position for p in explanation.passages] == sorted(
        p.position for p in explanation.passages
    )


async def test_an_adjustment_that_moves_a_passage_is_recorded_with_its_scores(store):
    await store.remember(
        "ns",
        "chat",
        [
            TurnInput("I blocked meeting-free Fridays starting June 6.", role="user"),
            TurnInput(
                "Meeting-free Fridays are a great habit! To keep meeting-free Fridays, decline "
                "Fridays invites early and tell your team about your meeting-free Fridays.",
                role="assistant",
            ),
        ],
    )
    config = _config(scorers=["cross_encoder"], adjust=["reply_credit"])
    models = GivenModels({"cross_encoder": KeywordScorer("c", "fridays")})
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    result = await pipeline.recall("meeting-free Fridays", SCOPE, 500, explain=True)
    assert result.explanation is not None
    user = next(p for p in result.explanation.passages if p.passage.turn.role == "user")
    (step,) = user.adjustments
    assert step.name == "reply_credit" and step.stage == "fusion"
    assert step.before == user.fused_score
    assert step.after > step.before
    assert step.after == user.score
    assert user.position == 1


async def test_a_question_naming_dates_shows_its_window_and_which_passages_are_inside(store):
    config = _config(scorers=["cross_encoder"], adjust=["time_range"])
    # The ranker prefers the beach; the question's month moves the Alps hike first.
    models = GivenModels({"cross_encoder": KeywordScorer("c", "beach")})
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    result = await pipeline.recall("Biscuit in June 2023", SCOPE, 2000, explain=True)
    explanation = result.explanation
    assert explanation is not None and explanation.date_window is not None
    assert explanation.date_window.start.startswith("2023-06-01")
    every = [*explanation.passages, *explanation.below_cut]
    inside = [p for p in every if p.in_date_window]
    assert [p.passage.turn.text for p in inside] == ["We hiked the Alps last summer with Biscuit."]
    assert inside[0].position == 1
    (step,) = inside[0].adjustments
    assert step.name == "time_range" and step.stage == "final" and step.after > step.before
    assert all(p.in_date_window is False for p in every if p not in inside)


async def test_the_cut_says_why_it_stopped_and_shows_the_best_passages_below_it(store):
    config = _config(scorers=["cross_encoder"])
    models = GivenModels({"cross_encoder": KeywordScorer("c", "biscuit")})
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    result = await pipeline.recall("Biscuit", SCOPE, 60, explain=True)
    explanation = result.explanation
    assert explanation is not None
    cut = explanation.cut
    assert cut.stop_reason == result.stop_reason
    assert cut.score_at_cut == result.score_at_cut
    assert cut.kept == len(result.passages) < cut.ranked
    assert explanation.below_cut, explanation
    assert all(not p.kept for p in explanation.below_cut)
    kept_keys = {s.candidate.passage.key for s in result.passages}
    assert not kept_keys & {p.passage.key for p in explanation.below_cut}
    text = format_explain(recall_output(result).explain)  # type: ignore[arg-type]
    assert f"--- cut: {result.stop_reason}" in text
    assert "below the cut" in text


async def test_a_recall_with_no_content_is_explained_as_empty(store):
    pipeline = RecallPipeline(store, _config(scorers=["lexical"]), GivenModels())  # type: ignore[arg-type]
    result = await pipeline.recall("?", SCOPE, 500, explain=True)
    assert result.explanation is not None
    assert result.explanation.passages == [] and result.explanation.below_cut == []
    assert result.explanation.cut.ranked == 0


async def test_a_cascade_explains_which_passages_the_expensive_ranker_scored(store):
    config = _config(scorers=["cross_encoder", "lexical"], expensive_candidates=2, adjust=[])
    models = GivenModels({"cross_encoder": KeywordScorer("c", "porto")})
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    result = await pipeline.recall("Biscuit Porto Clara", SCOPE, 2000, explain=True)
    explanation = result.explanation
    assert explanation is not None
    every = sorted([*explanation.passages, *explanation.below_cut], key=lambda p: p.position)
    head, rest = every[:2], every[2:]
    assert rest, every
    for item in head:
        assert item.fusion == "fusion"
        assert {r.ranker for r in item.rankers} == {"cross_encoder", "lexical"}
    for item in rest:
        assert item.fusion == "first_pass"
        assert {r.ranker for r in item.rankers} == {"lexical"}
        moved = [s for s in item.adjustments if s.name == "follow_with_rest"]
        if item.score != item.fused_score:  # shifted below the head
            (step,) = moved
            assert step.after == item.score and step.before == item.fused_score
    assert any(s.name == "follow_with_rest" for p in rest for s in p.adjustments), rest
