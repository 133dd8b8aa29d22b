"""The caches recall stages read (pipeline/corpus.py): passages, vectors, and what recall
leaves to the background embedding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import numpy as np
import pytest
from factories import make_passage
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline.corpus import PassageCache, extended
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.pipeline.retrieve import Corpus
from smartsearch_mcp.pipeline.term_counts import WordIndex
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


async def test_a_scope_read_again_counts_words_from_an_index_and_ranks_the_same(store):
    await _fill(store)
    pipeline = RecallPipeline(store, _config(), GivenModels())  # type: ignore[arg-type]
    questions = ["Where does Clara live?", "Who hiked the Alps?", "what did biscuit love"]
    first = [await _ranking_of(pipeline, q) for q in questions[:1]]
    corpus = await pipeline.corpora.scope_corpus(SCOPE)
    assert isinstance(corpus, Corpus) and corpus.word_index is None  # one query: no index
    again = [await _ranking_of(pipeline, q) for q in questions]
    assert corpus.word_index is not None and len(corpus.word_index) == len(corpus.lowered)
    plain = RecallPipeline(store, _config(), GivenModels())  # type: ignore[arg-type]
    alone = []
    for question in questions:
        plain.corpora.invalidate()  # each question on a corpus built for it: no index
        alone.append(await _ranking_of(plain, question))
    assert again == alone and first == alone[:1]


async def test_a_scope_that_gains_turns_is_extended_and_ranks_as_if_read_again(store):
    await _fill(store)
    config = _config(
        rank={"scorers": ["bi_encoder", "context", "lexical"], "embed_on_recall": 1000},
        retrieval={"dense": True},
    )
    models = GivenModels({"bi_encoder": HashEmbedder()})
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    fresh = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    reads = 0
    scope_turns = store.scope_turns

    async def counting(scope: Scope) -> list[Turn]:
        nonlocal reads
        reads += 1
        return await scope_turns(scope)

    store.scope_turns = counting  # type: ignore[method-assign]
    questions = ["Where does Clara live?", "Who hiked the Alps?", "what does biscuit love"]
    for question in questions:  # read once, then indexed
        await _ranking_of(pipeline, question)
    before = await pipeline.corpora.scope_corpus(SCOPE)
    assert isinstance(before, Corpus) and before.word_index is not None
    assert before.vectors is not None and before.context is not None
    for batch in (["Clara moved to Lisbon in August."], ["Biscuit now loves the river.", "ok"]):
        await store.remember("ns", "s2", [TurnInput(t, "Ann") for t in batch])
        pipeline.changed()
        for question in questions:
            fresh.invalidate()
            assert await _ranking_of(pipeline, question) == await _ranking_of(fresh, question)
    after = await pipeline.corpora.scope_corpus(SCOPE)
    assert isinstance(after, Corpus) and len(after.passages) == len(before.passages) + 3
    assert after.passages[: len(before.passages)] == before.passages
    assert after.word_index is not None and len(after.word_index) == len(after.lowered)
    assert reads == 1 + 2 * len(questions)  # the extended pipeline's one read, fresh's reads

    await store.remember("ns", "s3", [TurnInput("Alps again next June.", "Bo")])
    await store.forget("ns", ids=[after.passages[0].turn.id])  # one in, one out
    pipeline.changed()
    fresh.invalidate()
    assert await _ranking_of(pipeline, questions[1]) == await _ranking_of(fresh, questions[1])
    assert reads == 2 + 2 * len(questions) + 1  # a turn left the scope: read again


# the word statistics are extended unless the sample's stride changes (4 -> 6 texts, at most 5
# in the sample: all of 4, every second of 6)
@pytest.mark.parametrize(("stats_sample", "stats_kept"), [(100, True), (5, False), (3, True)])
def test_an_extended_corpus_derives_what_a_corpus_built_whole_does(
    stats_sample: int, stats_kept: bool
) -> None:
    texts = [
        ("Ann", "My sister Clara lives in Porto."),
        ("Bo", "We hiked the Alps, 3 days."),
        ("Ann", "Biscuit loves the beach!"),
        ("Cy Ruiz", "The release moved to Friday."),
        ("Ann", "Porto again in June, with Clara."),
        ("Bo", "ok"),
    ]
    passages = [make_passage(i + 1, t, speaker=s) for i, (s, t) in enumerate(texts)]
    whole = Corpus.build(passages)
    old = Corpus.build(passages[:4])
    for corpus in (whole, old):
        corpus.stats_sample = stats_sample
        corpus.corpus_stats(), corpus.vocabulary(), corpus.speakers()
        corpus.word_index = WordIndex(corpus.lowered)
    grown = extended(old, passages[4:], None)
    assert grown.passages == passages and grown.lowered == whole.lowered
    assert list(grown.texts) == list(whole.texts)
    assert (grown.stats is not None) == stats_kept
    assert grown.corpus_stats() == whole.corpus_stats()
    assert grown.vocabulary() == whole.vocabulary() and grown.speakers() == whole.speakers()
    assert grown.word_index is not None
    assert grown.word_index.starts.tolist() == whole.word_index.starts.tolist()
    assert grown.word_index.ids.tolist() == whole.word_index.ids.tolist()
    assert grown.reused and grown.context is None and grown.vectors is None
