"""The caches recall stages read (pipeline/corpus.py): passages, vectors, and what recall
leaves to the background embedding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
import pytest
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline.corpus import PassageCache
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, Turn, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))


class HashEmbedder:
    """A bag-of-words bi-encoder: unit vectors from hashed words."""

    model_id = "fake-bag-of-words:64"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word.strip(".,!?:"))) % self.dimension] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-9)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return HashEmbedder.embed(self, [text])[0]


def _config(**sections: dict[str, Any]) -> Config:
    base: dict[str, dict[str, Any]] = {"nlp": {"spacy_models": []}, "retrieval": {"dense": False}}
    for key, values in sections.items():
        base[key] = {**base.get(key, {}), **values}
    return Config().with_overrides(**base)


async def _fill(store: SQLiteStore) -> None:
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput("I adopted a puppy called Biscuit.", "Ann", timestamp="2023-05-01"),
            TurnInput("Biscuit loves the beach near Porto.", "Ann", timestamp="2023-05-02"),
            TurnInput("We hiked the Alps last summer.", "Bo", timestamp="2023-06-10"),
            TurnInput("My sister Clara lives in Porto.", "Ann", timestamp="2023-07-01"),
            TurnInput("Clara visited Biscuit and me in Porto.", "Ann", timestamp="2023-07-02"),
        ],
    )


def _turn(turn_id: int) -> Turn:
    text = f"turn {turn_id} has more words than one passage holds"
    return Turn(turn_id, "ns", "s", turn_id, None, "user", text, None, None, "", {})


def test_the_passage_cache_evicts_the_least_recently_used_turn() -> None:
    cache = PassageCache(max_words=4, overlap_words=1, capacity=2)
    first, second, third = _turn(1), _turn(2), _turn(3)
    kept = cache.split([first])[0]
    dropped = cache.split([second])[0]
    assert cache.split([first])[0] is kept  # a hit: first is now the most recently used
    cache.split([third])  # over capacity: the least recently used (second) goes
    assert cache.split([first])[0] is kept
    assert cache.split([second])[0] is not dropped
    assert len(cache) == 2


@pytest.fixture
async def store(tmp_path):
    s = await SQLiteStore.open(tmp_path / "m.db")
    yield s
    await s.close()


async def test_recall_writes_nothing_yet_ranks_with_the_vectors_it_computed(store):
    await _fill(store)
    config = _config(
        rank={"scorers": ["bi_encoder", "lexical"], "embed_on_recall": 100},
        retrieval={"dense": True},
    )
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": HashEmbedder()}))  # type: ignore[arg-type]
    version = await store.data_version()
    result = await pipeline.recall("Where does Clara live?", SCOPE, 1500)
    assert await store.data_version() == version  # no commit: recall is read-only
    assert "bi_encoder" in result.rankers
    assert not any("not embedded yet" in w for w in result.warnings)
    assert all(not np.isnan(s.ranker_scores["bi_encoder"]) for s in result.passages)
    # What it embedded is stored by the background embedding, not embedded again.
    assert await pipeline.embed_backlog() == 5
    assert await pipeline.embedding_backlog() == 0


class PoisonedEmbedder(HashEmbedder):
    """Raises on any batch holding a text with "poison", like a model failing on one turn."""

    def __init__(self) -> None:
        self.poisoned_calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any("poison" in text for text in texts):
            self.poisoned_calls += 1
            raise RuntimeError("the model cannot read this")
        return super().embed(texts)


async def test_background_embedding_skips_a_turn_the_model_fails_on_and_goes_on(store, caplog):
    embedder = PoisonedEmbedder()
    config = _config(rank={"scorers": ["bi_encoder", "lexical"]}, retrieval={"dense": True})
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": embedder}))  # type: ignore[arg-type]
    await store.remember("ns", "s1", [TurnInput("a poison pill first")])
    await store.remember("ns", "s1", [TurnInput(f"note {i} about the garden") for i in range(5)])
    assert await pipeline.embed_backlog(batch=4) == 5
    assert await pipeline.embedding_backlog() == 1  # only the turn it fails on
    assert pipeline.embeddings.failures() == 1
    assert sum("skips turn" in r.message for r in caplog.records) == 1

    # Later turns are not blocked, and the failing turn is not tried again.
    calls = embedder.poisoned_calls
    await store.remember("ns", "s2", [TurnInput("a later note about the kitchen")])
    assert await pipeline.embed_backlog(batch=4) == 1
    assert embedder.poisoned_calls == calls
    assert await pipeline.embedding_backlog() == 1


async def _ranking_of(pipeline: RecallPipeline, query: str) -> list[Any]:
    ranking = await pipeline.rank(query, SCOPE)
    return [(s.candidate.passage.key, s.score) for s in ranking.scored]


QUERIES = ["Where does Clara live?", "What is the puppy called?", "Who hiked the Alps?"]


async def test_concurrent_recalls_rank_exactly_as_one_recall_alone(store):
    """Deterministic, and the caches shared by recalls running at once in worker threads
    (scope, passages, entities) change no result."""
    await _fill(store)
    config = _config(rank={"scorers": ["lexical"]})
    alone = {}
    for query in QUERIES:
        alone[query] = await _ranking_of(RecallPipeline(store, config, GivenModels({})), query)  # type: ignore[arg-type]
    shared = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    together: dict[str, list[list[Any]]] = {query: [] for query in QUERIES}

    async def run(query: str) -> None:
        together[query].append(await _ranking_of(shared, query))

    async with anyio.create_task_group() as group:
        for _ in range(3):
            for query in QUERIES:
                group.start_soon(run, query)
    for query in QUERIES:
        assert alone[query]
        assert together[query] == [alone[query]] * 3
