"""The recall orchestration with deterministic fake models: parallel rankers off the event
loop, degrading when models are missing or fail, expansion hops, dates, both retrieval
modes, passage splitting."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))


class KeywordScorer:
    """Scores by how often `keyword` occurs; records the thread it ran on."""

    def __init__(self, name: str, keyword: str, delay: float = 0.0) -> None:
        self.name = name
        self.keyword = keyword
        self.delay = delay
        self.threads: list[int] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        with self._lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.threads.append(threading.get_ident())
        time.sleep(self.delay)
        with self._lock:
            self.active -= 1
        return [float(t.lower().count(self.keyword)) for t in texts]


class FailingScorer:
    name = "colbert"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        raise RuntimeError("boom")


class HashEmbedder:
    """A bag-of-words bi-encoder: unit vectors from hashed words."""

    name = "bi_encoder"
    model_id = "fake-bag-of-words:64"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                out[row, sum(map(ord, word.strip(".,!?:"))) % self.dimension] += 1.0
            norm = np.linalg.norm(out[row])
            if norm:
                out[row] /= norm
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return (self.embed(texts) @ self.embed_query(query)).astype(float).tolist()


def _config(**sections: dict[str, Any]) -> Config:
    base = {"nlp": {"spacy_models": []}, "retrieval": {"dense": False}}
    for key, values in sections.items():
        base[key] = {**base.get(key, {}), **values}
    return Config().with_overrides(**base)


@pytest.fixture
async def store(tmp_path):
    s = await SQLiteStore.open(tmp_path / "m.db")
    yield s
    await s.close()


async def _fill(store: SQLiteStore) -> None:
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput("I adopted a puppy called Biscuit.", "Ann", timestamp="2023-05-01"),
            TurnInput("Biscuit loves the beach near Porto.", "Ann", timestamp="2023-05-02"),
            TurnInput("We hiked the Alps last summer.", "Bo", timestamp="2023-06-10"),
            TurnInput("My sister Clara lives in Porto.", "Ann", timestamp="2023-07-01"),
            TurnInput("Clara works as a marine biologist.", "Bo", timestamp="2023-07-02"),
        ],
    )


class BarrierScorer(KeywordScorer):
    """Waits until `parties` scorers are inside `score` at once: it only finishes when the
    rankers really run in parallel (else the barrier breaks and the ranker fails)."""

    def __init__(self, name: str, keyword: str, barrier: threading.Barrier) -> None:
        super().__init__(name, keyword)
        self.barrier = barrier

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.barrier.wait()
        return super().score(query, texts)


async def test_configured_rankers_run_in_parallel_worker_threads(store):
    await _fill(store)
    barrier = threading.Barrier(2, timeout=10)
    cross = BarrierScorer("cross_encoder", "biscuit", barrier)
    colbert = BarrierScorer("colbert", "puppy", barrier)
    config = _config(rank={"scorers": ["cross_encoder", "colbert", "lexical"], "max_parallel": 2})
    registry = GivenModels({"cross_encoder": cross, "colbert": colbert})
    result = await RecallPipeline(store, config, registry).recall("Biscuit the puppy", SCOPE, 500)  # type: ignore[arg-type]
    assert result.rankers == ["colbert", "cross_encoder", "lexical"], result.warnings
    assert threading.get_ident() not in cross.threads + colbert.threads
    assert result.passages[0].candidate.passage.turn.text == "I adopted a puppy called Biscuit."


async def test_reply_credit_puts_the_users_turn_ahead_of_the_assistant_reply_echoing_it(store):
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
            TurnInput("Any tips for a quiet morning?", role="user"),
        ],
    )
    fridays = KeywordScorer("cross_encoder", "fridays")

    async def first_turn(adjust: list[str]) -> str:
        config = _config(rank={"scorers": ["cross_encoder"], "adjust": adjust})
        pipeline = RecallPipeline(store, config, GivenModels({"cross_encoder": fridays}))  # type: ignore[arg-type]
        result = await pipeline.recall("meeting-free Fridays", SCOPE, 500)
        return result.passages[0].candidate.passage.turn.role

    assert await first_turn([]) == "assistant"
    assert await first_turn(["reply_credit"]) == "user"


async def test_the_capacity_limiter_bounds_rankers_running_at_once(store):
    await _fill(store)
    shared = KeywordScorer("x", "biscuit", delay=0.05)
    config = _config(rank={"scorers": ["cross_encoder", "colbert"], "max_parallel": 1})
    registry = GivenModels({"cross_encoder": shared, "colbert": shared})
    await RecallPipeline(store, config, registry).recall("Biscuit", SCOPE, 500)  # type: ignore[arg-type]
    assert shared.max_active == 1


async def test_missing_rankers_degrade_to_the_bi_encoder_then_lexical_with_warnings(store):
    await _fill(store)
    config = _config(rank={"scorers": ["cross_encoder", "colbert"]})
    with_bi = GivenModels({"bi_encoder": HashEmbedder()}, ["Cross-encoder ranker unavailable"])
    result = await RecallPipeline(store, config, with_bi).recall("puppy Biscuit", SCOPE, 500)  # type: ignore[arg-type]
    assert result.rankers == ["bi_encoder"]
    assert any("bi-encoder" in w for w in result.warnings)
    assert "Cross-encoder ranker unavailable" in result.warnings
    assert result.passages

    nothing = GivenModels({})
    result = await RecallPipeline(store, config, nothing).recall("puppy Biscuit", SCOPE, 500)  # type: ignore[arg-type]
    assert result.rankers == ["lexical"]
    assert any("lexical" in w for w in result.warnings)
    assert result.passages[0].candidate.passage.turn.text == "I adopted a puppy called Biscuit."


async def test_a_failing_ranker_is_skipped_and_reported(store):
    await _fill(store)
    config = _config(rank={"scorers": ["cross_encoder", "colbert", "lexical"]})
    registry = GivenModels(
        {"cross_encoder": KeywordScorer("cross_encoder", "biscuit"), "colbert": FailingScorer()}
    )
    result = await RecallPipeline(store, config, registry).recall("Biscuit", SCOPE, 500)  # type: ignore[arg-type]
    assert result.rankers == ["cross_encoder", "lexical"]
    assert any("colbert failed" in w and "boom" in w for w in result.warnings)


async def test_expansion_reports_the_entity_hop_that_added_turns(store):
    await _fill(store)
    config = _config(
        rank={"scorers": ["lexical"]},
        retrieval={"max_candidates": 200, "prf_docs": 0},
        expansion={"first_hits": 3, "max_entities": 3, "per_entity": 5},
    )
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("Where does Ann's sister Clara live?", SCOPE)
    hop_entities = {h.entity for h in ranking.hops}
    assert "Porto" in hop_entities
    porto = next(h for h in ranking.hops if h.entity == "Porto")
    turns = {c.passage.turn.id: c.passage.turn.text for c in ranking.candidates}
    assert any("beach near Porto" in turns[t] for t in porto.turn_ids)


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_a_relation_the_memory_names_is_searched_by_that_name(store, mode):
    await _fill(store)  # "My sister Clara lives in Porto." / "Clara works as a marine biologist."
    config = _config(
        rank={"scorers": ["lexical"]},
        retrieval={"prf_docs": 0, "mode": mode},
        expansion={"enabled": False},
    )
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("What job does my sister have?", SCOPE)
    texts = [s.candidate.passage.turn.text for s in ranking.scored]
    assert "Clara works as a marine biologist." in texts  # it never says "sister"
    named = next(h for h in ranking.hops if h.entity == "Clara")
    sister = next(
        s.candidate.passage.turn
        for s in ranking.scored
        if "My sister" in s.candidate.passage.turn.text
    )
    assert named.found_in == [sister.id]
    plain = await pipeline.rank("What job does my friend have?", SCOPE)  # not a relation
    assert plain.hops == []
    assert "Clara works as a marine biologist." not in [
        s.candidate.passage.turn.text for s in plain.scored
    ]


async def test_relation_names_are_looked_up_again_once_the_memory_changes(store):
    await _fill(store)
    config = _config(rank={"scorers": ["lexical"]}, expansion={"enabled": False})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    assert (await pipeline.rank("Where does my cousin live?", SCOPE)).hops == []
    await store.remember("ns", "s2", [TurnInput("My cousin Ana moved to Lyon.", "Ann")])
    ranking = await pipeline.rank("Where does my cousin live?", SCOPE)
    assert [h.entity for h in ranking.hops] == ["Ana"]


async def test_a_word_the_memory_misspells_is_found_and_the_setting_turns_it_off(store):
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput("that new resturant on Main Street was so good", "Ann"),
            TurnInput("The museum opens at nine.", "Bo"),
        ],
    )
    found = {}
    for on in (True, False):
        config = _config(rank={"scorers": ["lexical"]}, retrieval={"misspellings": on})
        pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
        ranking = await pipeline.rank("Which restaurant was it?", SCOPE)
        found[on] = [s.candidate.passage.turn.text for s in ranking.scored]
    assert found[True] == ["that new resturant on Main Street was so good"]
    assert found[False] == []


async def test_a_word_the_question_misspells_is_searched_as_the_memory_spells_it(store):
    await store.remember("ns", "s1", [TurnInput("Biscuit goes to the groomer on Fridays.", "Ann")])
    config = _config(rank={"scorers": ["lexical"]})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("when is the gromer?", SCOPE)
    assert [s.candidate.passage.turn.text for s in ranking.scored] == [
        "Biscuit goes to the groomer on Fridays."
    ]


class RecordingEmbedder(HashEmbedder):
    """A HashEmbedder that keeps the questions it embedded."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


@pytest.mark.parametrize("on", [True, False])
async def test_the_bi_encoder_embeds_the_question_as_the_memory_spells_it(store, on):
    await store.remember("ns", "s1", [TurnInput("We tried the new restaurant downtown.", "Ann")])
    embedder = RecordingEmbedder()
    config = _config(
        rank={"scorers": ["bi_encoder", "lexical"]},
        retrieval={"dense": True, "misspellings": on},
    )
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": embedder}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("Which resturant did we try?", SCOPE)
    assert ranking.query == "Which resturant did we try?"  # the question as asked
    expected = "Which restaurant did we try?" if on else "Which resturant did we try?"
    assert set(embedder.queries) == {expected}


async def test_a_date_in_the_question_raises_turns_said_then(store):
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput("We went hiking together.", "Ann", timestamp="2023-01-10"),
            TurnInput("We went hiking again.", "Ann", timestamp="2023-06-10"),
        ],
    )
    config = _config(rank={"scorers": ["lexical"]}, retrieval={"prf_docs": 0})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    result = await pipeline.recall("What did Ann do in June 2023? hiking", SCOPE, 500)
    assert result.passages[0].candidate.passage.turn.timestamp.startswith("2023-06-10")


async def test_grep_and_indexed_modes_find_the_same_best_turn(store):
    await _fill(store)
    found = []
    for mode in ("grep", "indexed"):
        config = _config(rank={"scorers": ["lexical"]}, retrieval={"mode": mode})
        pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
        result = await pipeline.recall("marine biologist", SCOPE, 500)
        found.append(result.passages[0].candidate.passage.turn.text)
    assert found == ["Clara works as a marine biologist."] * 2


async def test_long_turns_are_ranked_as_passages_that_point_back_to_their_turn(store):
    filler = " ".join(f"word{i}" for i in range(300))
    text = f"{filler}. The secret code is tangerine. {filler}."
    (turn_id,) = (await store.remember("ns", "s1", [TurnInput(text, "Ann")])).ids
    config = _config(rank={"scorers": ["lexical"]}, passages={"max_words": 50, "overlap_words": 10})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    result = await pipeline.recall("tangerine secret code", SCOPE, 200)
    best = result.passages[0].candidate.passage
    assert best.turn.id == turn_id and "tangerine" in best.text
    assert len(best.text) < len(text) and text[best.start : best.end] == best.text


async def test_candidates_never_exceed_the_configured_maximum(store):
    await store.remember("ns", "s1", [TurnInput(f"hiking trip {i}") for i in range(300)])
    config = _config(rank={"scorers": ["lexical"]}, retrieval={"max_candidates": 50})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("hiking trip", SCOPE)
    assert len(ranking.candidates) <= 50
    assert ranking.timings_ms.keys() >= {"analyze", "retrieve", "expand", "rank"}


@pytest.mark.parametrize("query", ["hiking trip", "Where did Ann go on a hiking trip?"])
async def test_places_kept_for_expansion_and_left_unused_go_to_the_next_candidates(store, query):
    # Expansion keeps 30 places (4 entities x 15 / 2). "hiking trip" names no entity, so
    # nothing is kept; Ann's turns name no other entity, so expansion adds nothing.
    await store.remember(
        "ns", "s1", [TurnInput(f"Ann went on a hiking trip {i}") for i in range(300)]
    )
    config = _config(
        rank={"scorers": ["lexical"]},
        retrieval={"max_candidates": 50},
        expansion={"max_entities": 4, "per_entity": 15},
    )
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank(query, SCOPE)
    assert len(ranking.candidates) == 50
    assert ranking.hops == []


class MountainEmbedder(HashEmbedder):
    """Knows that hiking and the Alps are about mountains: one topic axis for those words,
    one for everything else, so a question and a turn sharing no word can be near."""

    model_id = "fake-mountains:2"
    dimension = 2
    TOPIC = ("mountain", "alps", "hiked", "trek")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [[float(any(w in t.lower() for w in self.TOPIC)), 0.3] for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), 2)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.parametrize("dense", [True, False])
async def test_dense_retrieval_adds_candidates_no_term_matches_and_caches_vectors(store, dense):
    await _fill(store)
    config = _config(
        rank={"scorers": ["bi_encoder", "lexical"]},
        retrieval={"dense": dense, "dense_candidates": 1},
    )
    embedder = MountainEmbedder()
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": embedder}))  # type: ignore[arg-type]
    query = "Which mountains did they trek in?"  # no word of it is in "We hiked the Alps…"
    ranking = await pipeline.rank(query, SCOPE)
    found = {c.passage.text: c.sources for c in ranking.candidates}
    if dense:
        assert found["We hiked the Alps last summer."] == ("dense",)  # found by dense alone
        # Recall writes nothing; the background embedding stores the vectors it computed.
        assert len(await store.turns_without_embeddings(embedder.model_id, 10)) == 5
        await pipeline.embed_backlog()
        assert await store.turns_without_embeddings(embedder.model_id, 10) == []
    else:
        assert "We hiked the Alps last summer." not in found  # no term brings it


class TopicEmbedder(HashEmbedder):
    """Two topics, cooking and soup, plus a small shared component (every cosine > 0)."""

    model_id = "fake-topics:3"
    dimension = 3

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [[float("cook" in t.lower()), float("soup" in t.lower()), 0.2] for t in texts]
        out = np.asarray(rows, dtype=np.float32).reshape(len(texts), 3)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.mark.parametrize("quota", [0, 1])
async def test_a_named_persons_own_turns_get_a_dense_channel_of_their_own(store, quota):
    await store.remember(
        "ns",
        "s1",
        [TurnInput(f"Ann, what do you like to cook on day {i}?", "Bo") for i in range(5)]
        + [TurnInput("Soup, every evening.", "Ann")],
    )
    config = _config(
        rank={"scorers": ["bi_encoder", "lexical"]},
        retrieval={
            "dense": True,
            "dense_candidates": 1,
            "lexical_candidates": 1,
            "bm25_candidates": 0,
            "speaker_bonus": 0.0,
            "speaker_candidates": quota,
            "max_candidates": 3,
        },
        expansion={"enabled": False},
    )
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": TopicEmbedder()}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("What does Ann like to cook?", SCOPE)

    texts = [c.passage.turn.text for c in ranking.candidates]
    assert len(texts) == 3
    # Bo's turns win every other channel and the agreement between them; Ann's own turn is
    # the best of what Ann said
    assert ("Soup, every evening." in texts) == bool(quota)


async def test_no_speaker_channel_when_the_question_names_no_speaker(store):
    await _fill(store)
    config = _config(
        rank={"scorers": ["bi_encoder", "lexical"]},
        retrieval={"dense": True, "speaker_candidates": 5},
    )
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": HashEmbedder()}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("Who works as a marine biologist?", SCOPE)
    assert ranking.candidates
    assert not any("speaker_dense" in c.sources for c in ranking.candidates)


async def test_bm25_ranks_and_adds_candidates_from_the_full_text_index(store):
    await _fill(store)
    config = _config(
        rank={"scorers": ["bm25", "lexical"]},
        retrieval={"bm25_candidates": 3, "max_candidates": 4},
        expansion={"enabled": False},
    )
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("marine biologist", SCOPE)
    assert ranking.rankers == ["bm25", "lexical"]
    best = ranking.scored[0]
    assert best.candidate.passage.turn.text == "Clara works as a marine biologist."
    assert best.ranker_scores["bm25"] > 0


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_bm25_is_no_channel_when_neither_ranking_nor_retrieving_with_it(store, mode):
    await _fill(store)
    config = _config(rank={"scorers": ["lexical"]}, retrieval={"mode": mode, "bm25_candidates": 0})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("marine biologist", SCOPE)
    assert ranking.candidates
    assert not any("bm25" in c.sources for c in ranking.candidates)


async def test_a_larger_budget_keeps_proportionally_more_passages(store):
    await store.remember("ns", "s1", [TurnInput(f"hiking trip number {i}") for i in range(100)])
    config = _config(
        rank={"scorers": ["lexical"]},
        truncation={"top_k": 10, "max_tokens": 1000},
        expansion={"enabled": False},
    )
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("hiking trip", SCOPE)
    assert len(pipeline.truncate(ranking, 1000).passages) == 10
    assert len(pipeline.truncate(ranking, 3000).passages) == 30


async def test_the_context_ranker_reads_a_reply_with_the_turn_it_answers(store):
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput("What instrument do you play?", "Bo"),
            TurnInput("The violin, since I was six.", "Ann"),
            TurnInput("I like tea.", "Ann"),
        ],
    )
    embedder = HashEmbedder()
    config = _config(rank={"scorers": ["context"]}, expansion={"enabled": False})
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": embedder}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("Which instrument does Ann play?", SCOPE)
    assert ranking.rankers == ["context"]
    by_text = {s.candidate.passage.text: s.ranker_scores["context"] for s in ranking.scored}
    # Only the speaker matches in the reply itself; its context (the question) matches more.
    assert by_text["The violin, since I was six."] > by_text["I like tea."]
    # Recall kept the three vectors it computed; the background stores them, embedding none.
    assert await pipeline.embed_backlog() == 3
    assert await pipeline.embedding_backlog() == 0


async def test_the_speaker_ranker_puts_what_a_named_person_said_first(store):
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput("Bo, do you still go running on weekends?", "Ann"),
            TurnInput("Running on weekends keeps me sane.", "Bo"),
        ],
    )
    scorers = {"bm25": None}
    ranked = {}
    for rankers in (["lexical"], ["lexical", "speaker"]):
        config = _config(
            # With two candidates and two rankers in opposite order, RRF ties; the prior
            # weighs a little more here to decide.
            rank={"scorers": rankers, "weights": {"speaker": 1.5}},
            # Feedback off: with two turns it would only re-weigh their own words.
            retrieval={"speaker_bonus": 0.0, "prf_docs": 0},
            expansion={"enabled": False},
        )
        pipeline = RecallPipeline(store, config, GivenModels(scorers))  # type: ignore[arg-type]
        ranking = await pipeline.rank("Does Bo go running on weekends?", SCOPE)
        ranked[tuple(rankers)] = [s.candidate.passage.turn.speaker for s in ranking.scored]
        assert ranking.rankers == sorted(rankers)
    # The question's words match Ann's question better; Bo said the answer.
    assert ranked[("lexical",)][0] == "Ann"
    assert ranked[("lexical", "speaker")][0] == "Bo"


async def test_the_speaker_prior_alone_never_orders_passages(store):
    await _fill(store)
    config = _config(rank={"scorers": ["speaker"]}, expansion={"enabled": False})
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    ranking = await pipeline.rank("Where does Ann's sister Clara live?", SCOPE)
    assert "lexical" in ranking.rankers
    assert ranking.scored[0].candidate.passage.turn.text == "My sister Clara lives in Porto."


async def test_indexed_mode_leaves_words_common_in_a_large_memory_out_of_the_index_query(
    store, monkeypatch
):
    import smartsearch_mcp.pipeline.corpus as corpus_module

    await store.remember("ns", "s1", [TurnInput(f"the garden plot number {i}") for i in range(60)])
    await store.remember("ns", "s2", [TurnInput("a zebra crossed the garden")])
    config = _config(
        rank={"scorers": ["lexical"]},
        retrieval={"mode": "indexed", "prf_docs": 0},
        expansion={"enabled": False},
    )
    pipeline = RecallPipeline(store, config, GivenModels({}))  # type: ignore[arg-type]
    everything = await pipeline.rank("garden zebra", SCOPE)
    assert len(everything.candidates) == 61
    monkeypatch.setattr(corpus_module, "PRUNE_FROM_TURNS", 10)
    pruned = await pipeline.rank("garden zebra", SCOPE)
    assert [c.passage.turn.text for c in pruned.candidates] == ["a zebra crossed the garden"]
    # A query of common words only keeps its rarest ones.
    assert len((await pipeline.rank("garden plot", SCOPE)).candidates) > 0


class CountingEmbedder(HashEmbedder):
    """Counts the passages it embeds."""

    def __init__(self) -> None:
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += len(texts)
        return super().embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return super().embed([text])[0]  # the query is not a passage


async def _fill_backlog(store: SQLiteStore, turns: int) -> None:
    await store.remember(
        "ns",
        "s1",
        [
            TurnInput(f"note {i}: the {('garden', 'kitchen', 'garage')[i % 3]} needs work")
            for i in range(turns)
        ]
        + [TurnInput("We hiked the Alps last summer.", "Bo")],
    )


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_a_recall_embeds_at_most_its_budget_and_reports_the_backlog(store, mode):
    await _fill_backlog(store, 300)
    embedder = CountingEmbedder()
    config = _config(
        rank={"scorers": ["bi_encoder", "context", "lexical"], "embed_on_recall": 20},
        retrieval={"dense": True, "mode": mode},
        expansion={"enabled": False},
    )
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": embedder}))  # type: ignore[arg-type]
    result = await pipeline.recall("What needs work in the garden?", SCOPE, 1500)
    assert embedder.embedded <= 20
    assert len(result.passages) > 20  # lexical signals still rank every candidate
    assert all("garden" in p.candidate.passage.text for p in result.passages[:20])
    assert any("not embedded yet" in w for w in result.warnings)
    assert "bi_encoder" in result.rankers

    # Once the backlog is embedded (the server's background task), nothing is left out.
    await pipeline.embed_backlog()
    pipeline.invalidate()
    embedder.embedded = 0
    result = await pipeline.recall("What needs work in the garden?", SCOPE, 1500)
    assert embedder.embedded == 0
    assert not any("not embedded yet" in w for w in result.warnings)


async def test_a_backlog_that_fits_the_budget_is_embedded_by_the_recall(store):
    await _fill_backlog(store, 5)
    embedder = CountingEmbedder()
    config = _config(
        rank={"scorers": ["bi_encoder", "context", "lexical"], "embed_on_recall": 64},
        retrieval={"dense": True},
    )
    pipeline = RecallPipeline(store, config, GivenModels({"bi_encoder": embedder}))  # type: ignore[arg-type]
    result = await pipeline.recall("Where did Bo go hiking?", SCOPE, 1500)
    assert embedder.embedded == 2 * 6  # six passages, plain and with context
    assert result.warnings == []
    await pipeline.embed_backlog()  # the background stores them, embedding nothing again
    assert embedder.embedded == 2 * 6
    assert await pipeline.embedding_backlog() == 0


async def test_partial_vectors_rank_like_complete_ones_after_the_backlog_is_gone(store):
    """A recall with budget 0 after the background embedded everything ranks exactly as a
    recall that embedded everything itself."""
    await _fill_backlog(store, 40)
    query = "kitchen work notes"
    unlimited = _config(
        rank={"scorers": ["bi_encoder", "context", "lexical"], "embed_on_recall": 10_000},
        retrieval={"dense": True},
    )
    first = RecallPipeline(store, unlimited, GivenModels({"bi_encoder": HashEmbedder()}))  # type: ignore[arg-type]
    expected = await first.rank(query, SCOPE)
    await first.embed_backlog()  # the background stores what the recall embedded
    starved = _config(
        rank={"scorers": ["bi_encoder", "context", "lexical"], "embed_on_recall": 0},
        retrieval={"dense": True},
    )
    second = RecallPipeline(store, starved, GivenModels({"bi_encoder": HashEmbedder()}))  # type: ignore[arg-type]
    got = await second.rank(query, SCOPE)
    assert [s.candidate.passage.key for s in got.scored] == [
        s.candidate.passage.key for s in expected.scored
    ]
    assert got.warnings == []


async def test_a_recall_that_meets_a_backlog_wakes_the_background_embedding(store):
    """Turns another process stored (a hook, an import) are embedded by the server once a
    recall meets them, not only after the server's own `remember`."""
    import anyio

    from smartsearch_mcp.memory import Memory

    embedder = CountingEmbedder()
    config = _config(
        rank={"scorers": ["bi_encoder", "context", "lexical"], "embed_on_recall": 5},
        retrieval={"dense": True},
    )
    memory = Memory(store, config, GivenModels({"bi_encoder": embedder}), "ns")  # type: ignore[arg-type]
    async with anyio.create_task_group() as group:
        group.start_soon(memory.index_in_background)
        await anyio.sleep(0.2)  # the start-up catch-up finds nothing
        await _fill_backlog(store, 100)  # written past this Memory, like another process
        result = await memory.recall("What needs work in the garden?")
        assert any("not embedded yet" in w for w in result.warnings)
        with anyio.fail_after(30):
            while await memory.pipeline.embedding_backlog():
                await anyio.sleep(0.05)
        group.cancel_scope.cancel()
    memory.pipeline.invalidate()
    result = await memory.recall("What needs work in the garden?")
    assert not any("not embedded yet" in w for w in result.warnings)


async def test_a_write_while_a_recall_checks_the_cached_scope_is_seen_not_an_error(tmp_path):
    """A recall awaiting the scope's fingerprint and a remember of the same process that
    clears the cache meanwhile (concurrent clients of one server): the recall reads the
    scope again, with the new turn, instead of failing on the vanished cache entry."""
    reader = await SQLiteStore.open(tmp_path / "m.db")
    writer = await SQLiteStore.open(tmp_path / "m.db")
    try:
        await writer.remember("ns", "s1", [TurnInput("Ann adopted a puppy.", "Ann")])
        pipeline = RecallPipeline(reader, _config(rank={"scorers": ["lexical"]}), GivenModels({}))  # type: ignore[arg-type]
        assert len((await pipeline.rank("puppy", SCOPE)).candidates) == 1
        fingerprint = reader.scope_fingerprint

        async def meanwhile(scope: Scope) -> Any:
            result = await fingerprint(scope)
            await writer.remember("ns", "s2", [TurnInput("Bo's puppy is called Rex.", "Bo")])
            pipeline.changed()  # what Memory.remember does after a write
            return result

        reader.scope_fingerprint = meanwhile  # type: ignore[method-assign]
        await writer.remember("elsewhere", "s9", [TurnInput("a commit elsewhere")])
        ranking = await pipeline.rank("puppy", SCOPE)
        assert {c.passage.turn.text for c in ranking.candidates} == {
            "Ann adopted a puppy.",
            "Bo's puppy is called Rex.",
        }
    finally:
        await reader.close()
        await writer.close()


async def test_a_cached_scope_is_read_again_only_when_its_own_turns_change(tmp_path):
    """Other connections commit often (the background embedding, other namespaces, other
    processes); the cached scope survives those, is extended when turns enter it and read
    again when a turn leaves it."""
    reader = await SQLiteStore.open(tmp_path / "m.db")
    writer = await SQLiteStore.open(tmp_path / "m.db")
    try:
        first = await writer.remember("ns", "s1", [TurnInput("Ann adopted a puppy.", "Ann")])
        pipeline = RecallPipeline(reader, _config(rank={"scorers": ["lexical"]}), GivenModels({}))  # type: ignore[arg-type]
        reads: list[Scope] = []
        scope_turns = reader.scope_turns

        async def counting(scope: Scope) -> list[Any]:
            reads.append(scope)
            return await scope_turns(scope)

        reader.scope_turns = counting  # type: ignore[method-assign]

        async def texts() -> set[str]:
            ranking = await pipeline.rank("puppy", SCOPE)
            return {c.passage.turn.text for c in ranking.candidates}

        assert await texts() == {"Ann adopted a puppy."}
        await writer.put_embeddings("some-model:3", [(first.ids[0], 0, b"\0" * 12)])
        await writer.remember("elsewhere", "s9", [TurnInput("Another puppy, elsewhere.")])
        assert await texts() == {"Ann adopted a puppy."}
        assert len(reads) == 1  # neither commit touched the scope

        added = await writer.remember("ns", "s2", [TurnInput("Bo's puppy is called Rex.", "Bo")])
        assert await texts() == {"Ann adopted a puppy.", "Bo's puppy is called Rex."}
        assert len(reads) == 1  # a turn entered it: extended with that turn, not read again
        await writer.forget("ns", ids=added.ids)
        assert await texts() == {"Ann adopted a puppy."}
        assert len(reads) == 2  # a turn left it: read again
    finally:
        await reader.close()
        await writer.close()
