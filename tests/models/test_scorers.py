"""The scorers on tiny local models: shape, determinism, order, threads, and oracles."""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny_models import COLBERT_DIM, HIDDEN, TinyModels

from smartsearch_mcp.models import (
    BiEncoderScorer,
    ColbertScorer,
    CrossEncoderScorer,
    ModelLocation,
    maxsim,
)

KINDS = ["cross_encoder", "colbert", "bi_encoder"]
QUERY = "where did margaret move"
TEXTS = [
    "margaret moved to paris in june",
    "tobias loves painting and weaving",
    "the dog went hiking yesterday",
    "she went to a reading club",
    "my friend has a guitar",
    "margaret moved to sweden",
    "",
]


def directory(path: Any) -> ModelLocation:
    return ModelLocation(str(path), str(path), "directory")


@pytest.mark.parametrize("kind", KINDS)
def test_each_scorer_returns_one_finite_float_per_text(
    tiny_scorers: dict[str, Any], kind: str
) -> None:
    scores = tiny_scorers[kind].score(QUERY, TEXTS)

    assert len(scores) == len(TEXTS)
    assert all(type(s) is float and math.isfinite(s) for s in scores)
    assert len(set(scores)) > 1, "random weights still give different texts different scores"


@pytest.mark.parametrize("kind", KINDS)
def test_scores_are_the_same_on_every_call(tiny_scorers: dict[str, Any], kind: str) -> None:
    scorer = tiny_scorers[kind]

    assert scorer.score(QUERY, TEXTS) == scorer.score(QUERY, TEXTS)


@pytest.mark.parametrize("kind", KINDS)
def test_scoring_a_permuted_list_gives_the_permuted_scores(
    tiny_scorers: dict[str, Any], kind: str
) -> None:
    scorer = tiny_scorers[kind]
    order = [3, 6, 0, 5, 1, 4, 2]

    scores = scorer.score(QUERY, TEXTS)
    permuted = scorer.score(QUERY, [TEXTS[i] for i in order])

    # Batches are padded differently after permuting: allow float noise, not reordering.
    assert permuted == pytest.approx([scores[i] for i in order], rel=1e-5, abs=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_an_empty_list_scores_to_an_empty_list(tiny_scorers: dict[str, Any], kind: str) -> None:
    assert tiny_scorers[kind].score(QUERY, []) == []


@pytest.mark.parametrize("kind", KINDS)
def test_threads_scoring_at_once_get_the_same_scores_as_one_thread(
    tiny_scorers: dict[str, Any], kind: str
) -> None:
    scorer = tiny_scorers[kind]
    expected = scorer.score(QUERY, TEXTS)
    start = threading.Barrier(4)

    def score_after_barrier(_: int) -> list[list[float]]:
        start.wait(timeout=30)
        return [scorer.score(QUERY, TEXTS) for _ in range(3)]

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = [r for rs in pool.map(score_after_barrier, range(4)) for r in rs]

    for result in results:
        assert result == pytest.approx(expected, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_a_text_longer_than_the_model_limit_is_truncated_not_an_error(
    tiny_scorers: dict[str, Any], kind: str
) -> None:
    long_text = " ".join(["margaret moved to paris"] * 200)  # 800 tokens, limit is 128

    [score] = tiny_scorers[kind].score(QUERY, [long_text])

    assert math.isfinite(score)


def test_the_cross_encoder_returns_raw_logits_not_probabilities(
    tiny_scorers: dict[str, Any], tiny_models: TinyModels
) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_models.bert))
    model = AutoModelForSequenceClassification.from_pretrained(str(tiny_models.bert)).eval()
    batch = tokenizer([QUERY] * len(TEXTS), TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits[:, 0].tolist()

    scores = tiny_scorers["cross_encoder"].score(QUERY, TEXTS)

    assert scores == pytest.approx(logits, abs=1e-5)
    assert any(s < 0 for s in scores), "a sigmoid would make every score positive"


def test_colbert_scores_are_maxsim_over_its_token_embeddings(
    tiny_scorers: dict[str, Any],
) -> None:
    scorer: ColbertScorer = tiny_scorers["colbert"]
    query_tokens, text_tokens = scorer._encode(QUERY, TEXTS)

    assert np.asarray(query_tokens).shape[-1] == COLBERT_DIM
    expected = [_maxsim_oracle(_to_lists(query_tokens), _to_lists(t)) for t in text_tokens]
    assert scorer.score(QUERY, TEXTS) == pytest.approx(expected, rel=1e-4)


def test_a_bare_bert_directory_also_loads_as_colbert_and_as_bi_encoder(
    tiny_models: TinyModels,
) -> None:
    # No modules.json: the libraries add their defaults (a projection, mean pooling).
    colbert = ColbertScorer.load(directory(tiny_models.bert))
    bi_encoder = BiEncoderScorer.load(directory(tiny_models.bert))

    assert all(math.isfinite(s) for s in colbert.score(QUERY, TEXTS))
    assert bi_encoder.dimension == HIDDEN
    assert all(math.isfinite(s) for s in bi_encoder.score(QUERY, TEXTS))


def test_a_cross_encoder_with_several_outputs_is_refused(tiny_models: TinyModels) -> None:
    with pytest.raises(ValueError, match="num_labels=1"):
        CrossEncoderScorer.load(directory(tiny_models.bert), importer=_three_label_importer)


def test_embed_gives_unit_float32_rows_of_the_model_dimension(
    tiny_scorers: dict[str, Any],
) -> None:
    bi_encoder: BiEncoderScorer = tiny_scorers["bi_encoder"]

    vectors = bi_encoder.embed(TEXTS)

    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), HIDDEN) == (len(TEXTS), bi_encoder.dimension)
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(len(TEXTS)), abs=1e-5)


def test_embedding_nothing_gives_an_empty_matrix_of_the_right_width(
    tiny_scorers: dict[str, Any],
) -> None:
    vectors = tiny_scorers["bi_encoder"].embed([])

    assert vectors.shape == (0, HIDDEN)
    assert vectors.dtype == np.float32


def test_bi_encoder_scores_are_cosines_of_the_query_and_text_embeddings(
    tiny_scorers: dict[str, Any],
) -> None:
    bi_encoder: BiEncoderScorer = tiny_scorers["bi_encoder"]

    query = bi_encoder.embed_query(QUERY)

    assert query.shape == (HIDDEN,)
    assert query == pytest.approx(bi_encoder.embed([QUERY])[0], abs=1e-6)
    expected = bi_encoder.embed(TEXTS) @ query
    assert bi_encoder.score(QUERY, TEXTS) == pytest.approx(expected.tolist(), abs=1e-6)


def test_the_bi_encoder_model_id_names_the_weights_and_the_dimension(
    tiny_scorers: dict[str, Any], tiny_models: TinyModels
) -> None:
    model_id = tiny_scorers["bi_encoder"].model_id

    assert model_id == f"{tiny_models.sentence_transformer.resolve()}:{HIDDEN}"


vectors = st.lists(
    st.lists(st.floats(-2, 2, allow_nan=False, width=32), min_size=3, max_size=3),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None)
@given(query=vectors, texts=st.lists(vectors, max_size=4))
def test_maxsim_matches_a_plain_python_oracle(
    query: list[list[float]], texts: list[list[list[float]]]
) -> None:
    expected = [_maxsim_oracle(query, text) for text in texts]

    assert maxsim(np.array(query), [np.array(t) for t in texts]) == pytest.approx(
        expected, rel=1e-4, abs=1e-4
    )


def test_maxsim_takes_torch_tensors_and_scores_a_text_without_tokens_zero() -> None:
    import torch

    query = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    texts = [torch.tensor([[0.5, 0.5], [1.0, -1.0]]), torch.zeros((0, 2))]

    assert maxsim(query, texts) == [pytest.approx(1.5), 0.0]


def test_maxsim_agrees_with_pylate_colbert_scores() -> None:
    scores_module = pytest.importorskip("pylate.scores", reason="pylate is an optional extra")
    import torch

    generator = torch.Generator().manual_seed(3)
    # Non-negative vectors: pylate zeroes padded positions rather than excluding them, so with
    # negative dot products its padded MaxSim would differ from the exact one.
    query = torch.rand(5, 8, generator=generator)
    texts = [torch.rand(n, 8, generator=generator) for n in (4, 9, 1)]
    padded = torch.nn.utils.rnn.pad_sequence(texts, batch_first=True)
    mask = torch.zeros(padded.shape[:2])
    for i, text in enumerate(texts):
        mask[i, : len(text)] = 1

    oracle = scores_module.colbert_scores(query.unsqueeze(0), padded, documents_mask=mask)[0]

    assert maxsim(query, texts) == pytest.approx(oracle.tolist(), rel=1e-5)


def _maxsim_oracle(query: list[list[float]], text: list[list[float]]) -> float:
    if not text:
        return 0.0
    return sum(max(sum(q * t for q, t in zip(qv, tv, strict=True)) for tv in text) for qv in query)


def _to_lists(tokens: Any) -> list[list[float]]:
    if hasattr(tokens, "detach"):
        tokens = tokens.detach().cpu().numpy()
    return np.asarray(tokens, dtype=np.float64).tolist()


def _three_label_importer(name: str) -> Any:
    import importlib

    module = importlib.import_module(name)
    if name != "sentence_transformers":
        return module

    class ThreeLabels:
        CrossEncoder = staticmethod(lambda *args, **kwargs: _Labels(3))

    return ThreeLabels


class _Labels:
    def __init__(self, num_labels: int) -> None:
        self.num_labels = num_labels


class _FakeColbert:
    def __init__(self, path: str, **options: Any) -> None:
        self.path, self.options = path, options


@pytest.mark.parametrize(
    ("sentence_transformers", "expected"),
    [
        ({"MultiVectorEncoder": _FakeColbert}, "sentence_transformers"),
        ({}, "pylate"),  # sentence-transformers < 6 has no MultiVectorEncoder
    ],
)
def test_the_colbert_backend_is_sentence_transformers_when_it_has_multi_vector_support(
    sentence_transformers: dict[str, Any], expected: str
) -> None:
    import types

    fakes = {
        "sentence_transformers": types.SimpleNamespace(**sentence_transformers),
        "pylate.models": types.SimpleNamespace(ColBERT=_FakeColbert),
    }
    location = ModelLocation("org/colbert", "org/colbert", "hub-cache")

    scorer = ColbertScorer.load(location, device="cpu", importer=fakes.__getitem__)

    assert scorer.backend == expected
    assert scorer._model.path == "org/colbert"
    assert scorer._model.options == {"device": "cpu", "local_files_only": True}


def test_the_real_colbert_backend_is_the_one_the_installed_libraries_support(
    tiny_scorers: dict[str, Any],
) -> None:
    import sentence_transformers

    native = hasattr(sentence_transformers, "MultiVectorEncoder")
    assert tiny_scorers["colbert"].backend == ("sentence_transformers" if native else "pylate")


def test_length_sorted_batches_put_similar_lengths_together_within_both_limits() -> None:
    from smartsearch_mcp.models.scorers import length_sorted_batches

    lengths = [5, 40, 12, 40, 7, 100, 12]

    batches = length_sorted_batches(lengths, max_rows=3, max_tokens=90)

    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert batches == [[5], [1, 3], [2, 6, 4], [0]]
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * lengths[batch[0]] <= 90


@pytest.mark.parametrize("kind", ["cross_encoder", "colbert"])
def test_a_ranker_sets_its_torch_thread_count_in_the_worker_thread_it_runs_in(
    tiny_scorers: dict[str, Any], kind: str
) -> None:
    import threading

    import torch

    scorer = tiny_scorers[kind]
    seen: list[int] = []

    def work() -> None:
        torch.set_num_threads(2)  # what this worker thread had before
        scorer.score(QUERY, TEXTS)
        seen.append(torch.get_num_threads())

    before = torch.get_num_threads()
    scorer.threads = 1
    try:
        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
    finally:
        scorer.threads = None
        torch.set_num_threads(before)
    assert seen == [1]
