"""ColBERT token vectors stored ahead of time (pipeline/token_vectors.py): what the background
indexing stores, what a recall reads, encodes itself and leaves to the background."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from given_models import GivenModels
from tiny_models import TinyModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ColbertScorer, ModelLocation
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.pipeline.token_vectors import model_key, pack_tokens, unpack_tokens
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))
QUERY = "where does margaret live"
TURNS = [
    TurnInput("margaret moved to paris in june", "Ann"),
    TurnInput("tobias loves painting and weaving", "Bo"),
    TurnInput("the dog went hiking yesterday with a friend", "Ann"),
    TurnInput("margaret lives in berlin with her dog", "Bo"),
    TurnInput("where is the rental office", "Ann"),
]


@pytest.fixture(scope="module")
def colbert(tiny_models: TinyModels) -> ColbertScorer:
    path = str(tiny_models.colbert)
    return ColbertScorer.load(ModelLocation(path, path, "directory"), batch_size=2)


def _config(**rank: Any) -> Config:
    return Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False},
        rank={"scorers": ["colbert"], **rank},
    )


async def _store(tmp_path: Path) -> SQLiteStore:
    store = await SQLiteStore.open(tmp_path / "memory.db")
    await store.remember("ns", "s1", TURNS)
    return store


async def _colbert_scores(pipeline: RecallPipeline) -> dict[tuple[int, int], float]:
    ranking = await pipeline.rank(QUERY, SCOPE)
    assert "colbert" in ranking.rankers, ranking.warnings
    return {s.candidate.passage.key: s.ranker_scores["colbert"] for s in ranking.scored}


async def _stored(store: SQLiteStore, colbert: ColbertScorer) -> dict[tuple[int, int], bytes]:
    keys = [(turn_id, 0) for turn_id in range(1, len(TURNS) + 1)]
    return await store.get_embeddings(model_key(colbert), keys)


def test_token_vectors_round_trip_as_float16_with_their_token_count() -> None:
    tokens = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)

    blob = pack_tokens(tokens)
    back = unpack_tokens(blob)

    assert back is not None and back.dtype == np.float16 and back.shape == (7, 5)
    assert np.allclose(back, tokens, rtol=1e-3, atol=1e-3)
    assert len(blob) == 8 + 7 * 5 * 2


def test_a_value_in_another_format_is_not_read_as_token_vectors() -> None:
    blob = pack_tokens(np.ones((3, 4), dtype=np.float32))

    assert unpack_tokens(blob[:-2]) is None
    assert unpack_tokens(b"\x00" * 5) is None
    assert unpack_tokens(np.ones(16, dtype=np.float32).tobytes()) is None  # a bi-encoder vector


async def test_precomputed_token_vectors_give_the_scores_of_encoding_at_query_time(
    tmp_path: Path, colbert: ColbertScorer
) -> None:
    store = await _store(tmp_path)
    registry = GivenModels({"colbert": colbert})
    try:
        at_query_time = await _colbert_scores(RecallPipeline(store, _config(), registry))
        indexed = RecallPipeline(store, _config(), registry)
        assert await indexed.embedding_backlog() == len(TURNS)

        stored = await indexed.embed_backlog()
        precomputed = await _colbert_scores(indexed)

        assert stored == len(TURNS) and await indexed.embedding_backlog() == 0
        assert len(await _stored(store, colbert)) == len(TURNS)
        assert indexed.token_vectors.pending == {}  # nothing was left to encode at recall
        assert set(precomputed) == set(at_query_time)
        for key, score in at_query_time.items():
            assert precomputed[key] == pytest.approx(score, rel=1e-3, abs=1e-3)
        assert sorted(precomputed, key=precomputed.__getitem__) == sorted(
            at_query_time, key=at_query_time.__getitem__
        )
    finally:
        await store.close()


async def test_recall_keeps_what_it_encoded_for_the_background_and_writes_nothing(
    tmp_path: Path, colbert: ColbertScorer
) -> None:
    store = await _store(tmp_path)
    pipeline = RecallPipeline(store, _config(), GivenModels({"colbert": colbert}))
    woken: list[bool] = []
    pipeline.on_backlog = lambda: woken.append(True)
    try:
        first = await _colbert_scores(pipeline)
        assert await _stored(store, colbert) == {}
        assert len(pipeline.token_vectors.pending[model_key(colbert)]) == len(first)
        assert woken

        second = await _colbert_scores(pipeline)  # from the pending vectors: same scores
        assert second == first

        # the pending ones stored as they are, then the other turns indexed
        assert await pipeline.embed_backlog() == len(TURNS)
        assert len(await _stored(store, colbert)) == len(TURNS)
        assert pipeline.token_vectors.pending[model_key(colbert)] == {}
    finally:
        await store.close()


async def test_a_recall_encodes_at_most_its_budget_and_says_colbert_left_the_rest_out(
    tmp_path: Path, colbert: ColbertScorer
) -> None:
    store = await _store(tmp_path)
    pipeline = RecallPipeline(store, _config(embed_on_recall=2), GivenModels({"colbert": colbert}))
    try:
        ranking = await pipeline.rank(QUERY, SCOPE)

        scores = [s.ranker_scores["colbert"] for s in ranking.scored]
        assert sum(not math.isnan(v) for v in scores) == 2
        assert len(pipeline.token_vectors.pending[model_key(colbert)]) == 2
        left_out = f"{len(scores) - 2} candidate(s) have no ColBERT token vectors"
        assert len(scores) > 2 and any(left_out in w for w in ranking.warnings)
        # NaN ranks last: the two scored candidates come first
        assert all(not math.isnan(v) for v in scores[:2])
    finally:
        await store.close()


async def test_with_no_token_vectors_and_no_budget_colbert_sits_out_and_lexical_ranks(
    tmp_path: Path, colbert: ColbertScorer
) -> None:
    store = await _store(tmp_path)
    pipeline = RecallPipeline(store, _config(embed_on_recall=0), GivenModels({"colbert": colbert}))
    try:
        ranking = await pipeline.rank(QUERY, SCOPE)

        assert ranking.rankers == ["lexical"]
        assert any("ColBERT left them out" in w for w in ranking.warnings)
        assert ranking.scored[0].candidate.passage.turn.text.startswith("margaret")
    finally:
        await store.close()
