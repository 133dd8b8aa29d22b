"""SPLADE in recall: document vectors stored ahead of time under the model's own key, the
SPLADE candidate channel finding passages no query word matches, the SPLADE ranker, and
recall going on without it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from given_models import GivenModels

from smartsearch_mcp.config import Config
from smartsearch_mcp.models.splade import SparseVector
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.pipeline.sparse import SparseMatrix
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))
# What a learned sparse model does that grep cannot: a word also weighs related words.
RELATED = {"puppy": ("dog", "pet"), "dog": ("pet",), "kitten": ("cat", "pet")}


class ExpandingSplade:
    """A deterministic SPLADE stand-in: each word (and the words related to it) weighs 1."""

    name = "splade"
    model_id = "fake-splade:1"

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.encoded_documents = 0

    def _vector(self, text: str) -> SparseVector:
        weights: dict[int, float] = {}
        for raw in text.lower().split():
            word = raw.strip(".,!?:")
            for term in (word, *RELATED.get(word, ())):
                index = self.vocabulary.setdefault(term, len(self.vocabulary))
                weights[index] = 1.0
        indices = np.array(sorted(weights), dtype=np.int32)
        return SparseVector(indices, np.array([weights[i] for i in indices], dtype=np.float32))

    def encode(self, texts: Sequence[str]) -> list[SparseVector]:
        self.encoded_documents += len(texts)
        return [self._vector(text) for text in texts]

    def encode_query(self, text: str) -> SparseVector:
        return self._vector(text)

    def score_encoded(self, query: str, documents: Sequence[SparseVector]) -> list[float]:
        vector = self._vector(query)
        return [d.dot(vector) for d in documents]

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.score_encoded(query, [self._vector(t) for t in texts])


def _config(candidates: int = 10, scorers: tuple[str, ...] = ("lexical", "splade")) -> Config:
    return Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False, "splade_candidates": candidates},
        rank={"scorers": list(scorers)},
    )


@pytest.fixture
async def store(tmp_path):
    s = await SQLiteStore.open(tmp_path / "m.db")
    await s.remember(
        "ns",
        "s1",
        [
            TurnInput("I adopted a puppy called Biscuit.", "Ann", timestamp="2023-05-01"),
            TurnInput("We hiked the Alps last summer.", "Bo", timestamp="2023-06-10"),
            TurnInput("My sister Clara lives in Porto.", "Ann", timestamp="2023-07-01"),
        ],
    )
    yield s
    await s.close()


def test_the_sparse_matrix_scores_every_passage_by_its_dot_product() -> None:
    splade = ExpandingSplade()
    vectors = splade.encode(["a puppy", "the cat", "a dog and a puppy"])
    matrix = SparseMatrix.empty(4, splade.model_id)
    for row, vector in enumerate(vectors):
        matrix.set(row, vector)
    query = splade.encode_query("pet dog")
    expected = [v.dot(query) for v in vectors] + [0.0]  # the last row is not encoded
    assert matrix.scores(query).tolist() == pytest.approx(expected)
    assert matrix.scores(query)[0] == pytest.approx(2.0)  # puppy -> dog, pet
    grown = matrix.extended(2)  # passages added to the scope: not encoded yet
    assert grown.known.tolist() == [True] * 3 + [False] * 3 and len(matrix.known) == 4
    assert grown.scores(query).tolist() == pytest.approx([*expected, 0.0, 0.0])


async def test_the_splade_channel_finds_a_passage_no_query_word_matches(store) -> None:
    pipeline = RecallPipeline(store, _config(), GivenModels({"splade": ExpandingSplade()}))  # type: ignore[arg-type]
    result = await pipeline.recall("Who has a pet?", SCOPE, 500)
    assert result.passages, result.warnings
    assert "puppy" in result.passages[0].candidate.passage.text
    assert "splade" in result.rankers


async def test_without_the_channel_grep_alone_finds_nothing_for_that_question(store) -> None:
    pipeline = RecallPipeline(
        store, _config(candidates=0), GivenModels({"splade": ExpandingSplade()})
    )  # type: ignore[arg-type]
    result = await pipeline.recall("Who has a pet?", SCOPE, 500)
    assert not any("puppy" in p.candidate.passage.text for p in result.passages)


async def test_document_vectors_are_stored_in_the_background_under_the_models_key(
    store,
) -> None:
    splade = ExpandingSplade()
    pipeline = RecallPipeline(store, _config(), GivenModels({"splade": splade}))  # type: ignore[arg-type]
    assert await pipeline.embedding_backlog() == 3
    assert await pipeline.embed_backlog() == 3
    assert await pipeline.embedding_backlog() == 0
    turns = await store.get_turns([1, 2, 3])
    stored = await store.get_embeddings(splade.model_id, [(t.id, 0) for t in turns])
    assert len(stored) == 3
    expected = splade.encode_query("Ann: I adopted a puppy called Biscuit.")  # ranking text
    assert SparseVector.from_bytes(stored[(1, 0)]).indices.tolist() == expected.indices.tolist()
    before = splade.encoded_documents
    fresh = RecallPipeline(store, _config(), GivenModels({"splade": splade}))  # type: ignore[arg-type]
    result = await fresh.recall("Who has a pet?", SCOPE, 500)
    assert "puppy" in result.passages[0].candidate.passage.text
    assert splade.encoded_documents == before  # the recall encoded only the query


async def test_a_recall_keeps_what_it_encoded_for_the_background_to_store(store) -> None:
    splade = ExpandingSplade()
    pipeline = RecallPipeline(store, _config(), GivenModels({"splade": splade}))  # type: ignore[arg-type]
    await pipeline.recall("Who has a pet?", SCOPE, 500)
    assert await store.get_embeddings(splade.model_id, [(1, 0)]) == {}  # recall never writes
    assert await pipeline.embed_backlog() == 3  # the recall's vectors, stored now
    assert splade.encoded_documents == 3


async def test_recall_answers_without_splade_and_says_why(store) -> None:
    pipeline = RecallPipeline(
        store, _config(), GivenModels({}, ["SPLADE ranker unavailable: not installed"])
    )  # type: ignore[arg-type]
    result = await pipeline.recall("Where does Clara live?", SCOPE, 500)
    assert "Porto" in result.passages[0].candidate.passage.text
    assert "splade" not in result.rankers
    assert any("SPLADE" in w for w in result.warnings)


async def test_splade_alone_is_a_learned_ranker_the_bi_encoder_does_not_replace(store) -> None:
    pipeline = RecallPipeline(
        store, _config(scorers=("splade",)), GivenModels({"splade": ExpandingSplade()})
    )  # type: ignore[arg-type]
    result = await pipeline.recall("Who has a pet?", SCOPE, 500)
    assert result.rankers == ["splade"]
    assert not any("ranked with the bi-encoder" in w for w in result.warnings)


def test_scores_of_some_passages_are_their_dot_products_and_unknown_ones_nan() -> None:
    splade = ExpandingSplade()
    vectors = splade.encode(["a puppy", "the cat", "a dog"])
    matrix = SparseMatrix.empty(4, splade.model_id)
    for row, vector in enumerate(vectors):
        matrix.set(row, vector)
    query = splade.encode_query("pet dog")
    got = matrix.scores_at([2, 0, 3], query)
    assert got[:2] == pytest.approx([vectors[2].dot(query), vectors[0].dot(query)])
    assert np.isnan(got[2])


class PoisonedSplade(ExpandingSplade):
    """Raises on any batch holding a text with "poison", like a model failing on one turn."""

    def encode(self, texts: Sequence[str]) -> list[SparseVector]:
        if any("poison" in text for text in texts):
            raise RuntimeError("the model cannot read this")
        return super().encode(texts)


async def test_background_encoding_skips_a_turn_splade_fails_on_and_goes_on(store, caplog):
    pipeline = RecallPipeline(store, _config(), GivenModels({"splade": PoisonedSplade()}))  # type: ignore[arg-type]
    await store.remember("ns", "s2", [TurnInput("a poison pill"), TurnInput("a kitten naps")])

    assert await pipeline.embed_backlog(batch=2) == 4  # the three turns and the kitten
    assert await pipeline.embedding_backlog() == 1  # only the turn it fails on
    assert pipeline.sparse.failed == {PoisonedSplade().model_id: {4}}
    assert sum("skips turn 4" in r.getMessage() for r in caplog.records) == 1
    await store.remember("ns", "s3", [TurnInput("a later note")])
    assert await pipeline.embed_backlog(batch=2) == 1  # not blocked, not tried again
