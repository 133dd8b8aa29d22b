"""SPLADE: scores are dot(splade(q), splade(d)) with splade(x) the max over tokens of
log(1 + relu(MLM logits)); the model is built only from files whose hashes match; a missing
model is a warning, not a failure."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np
import pytest
from tiny_models import VOCAB

from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import ModelLocation, ModelRegistry, ModelUnavailable
from smartsearch_mcp.models.splade import (
    MODEL_FILES,
    SPLADE_TINY,
    SparseVector,
    SpladeScorer,
    packaged_folder,
    resolve_splade,
)

TEXTS = [
    "I adopted a dog in march.",
    "She went sailing at the coast with a friend.",
    "Margaret loves weaving and music.",
    "the",
]
QUERY = "who has a dog?"


def build_tiny_splade(directory: Path, *, seed: int = 0) -> Path:
    """A 2-layer BertForMaskedLM (hidden 32, tied embeddings) over the tiny vocabulary, with
    the files the SPLADE loader reads."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast.from_pretrained(str(directory))
    config = BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        initializer_range=0.2,
    )
    torch.manual_seed(seed)
    BertForMaskedLM(config).eval().save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return directory


@pytest.fixture(scope="module")
def splade_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_splade(tmp_path_factory.mktemp("splade") / "model")


@pytest.fixture(scope="module")
def scorer(splade_dir: Path) -> SpladeScorer:
    return SpladeScorer.load(ModelLocation(str(splade_dir), str(splade_dir), "directory"))


def _pins(directory: Path) -> dict[str, str]:
    return {n: hashlib.sha256((directory / n).read_bytes()).hexdigest() for n in MODEL_FILES}


def _formula(directory: Path, texts: list[str]) -> np.ndarray:
    """splade(x) computed the plain way, with transformers' own loader and tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    model = BertForMaskedLM.from_pretrained(str(directory)).eval()
    out = []
    for text in texts:  # one at a time: no padding involved
        batch = tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            logits = model(**batch).logits[0]
        out.append(torch.log1p(torch.relu(logits)).max(dim=0).values.numpy())
    return np.stack(out)


def test_scores_are_the_dot_product_of_the_splade_vectors(
    scorer: SpladeScorer, splade_dir: Path
) -> None:
    vectors = _formula(splade_dir, [QUERY, *TEXTS])
    expected = vectors[1:] @ vectors[0]
    assert scorer.score(QUERY, TEXTS) == pytest.approx(expected.tolist(), rel=1e-5, abs=1e-6)
    encoded = scorer.encode(TEXTS)
    for vector, row in zip(encoded, vectors[1:], strict=True):
        np.testing.assert_allclose(vector.dense(len(VOCAB)), row, rtol=1e-5, atol=1e-6)
        assert (vector.values > 0).all()


def test_scores_do_not_depend_on_batching_or_order(scorer: SpladeScorer) -> None:
    first = scorer.score(QUERY, TEXTS)
    assert scorer.score(QUERY, TEXTS) == first
    reversed_scores = scorer.score(QUERY, TEXTS[::-1])
    assert reversed_scores[::-1] == pytest.approx(first, rel=1e-5)
    alone = [scorer.score(QUERY, [text])[0] for text in TEXTS]
    assert alone == pytest.approx(first, rel=1e-5)
    assert scorer.score_encoded(QUERY, scorer.encode(TEXTS)) == pytest.approx(first, rel=1e-6)


def test_an_empty_list_scores_to_an_empty_list(scorer: SpladeScorer) -> None:
    assert scorer.score(QUERY, []) == []
    assert scorer.encode([]) == []


def test_the_loader_refuses_a_file_whose_hash_differs(splade_dir: Path, tmp_path: Path) -> None:
    pins = _pins(splade_dir)
    location = ModelLocation("tiny", str(splade_dir), "directory")
    SpladeScorer.load(location, pins=pins)  # the right files load
    changed = dict(pins, **{"model.safetensors": "0" * 64})
    with pytest.raises(ModelUnavailable, match="does not match its pinned SHA-256"):
        SpladeScorer.load(location, pins=changed)


def test_the_packaged_model_is_checked_against_its_own_pins(
    splade_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tiny model's files in place of the packaged one: their hashes are not the pins.
    location = ModelLocation(SPLADE_TINY.name, str(splade_dir), "package")
    with pytest.raises(ModelUnavailable, match=r"config\.json does not match"):
        SpladeScorer.load(location)


def test_a_packaged_model_that_is_not_installed_names_the_extra() -> None:
    absent = dataclasses.replace(SPLADE_TINY, distribution="no-such-distribution-xyz")
    assert packaged_folder(absent) is None
    with pytest.raises(ModelUnavailable, match="neither a directory nor a known"):
        resolve_splade("some-other-splade")
    with pytest.raises(ModelUnavailable, match="does not exist"):
        resolve_splade("/no/such/splade/dir")


def test_sparse_vectors_round_trip_through_bytes() -> None:
    vector = SparseVector(np.array([2, 7, 30], dtype=np.int32), np.array([0.5, 1.25, 3.0], "f4"))
    back = SparseVector.from_bytes(vector.to_bytes())
    assert back.indices.tolist() == [2, 7, 30]
    assert back.values.tolist() == [0.5, 1.25, 3.0]
    other = SparseVector(np.array([7, 30, 31], dtype=np.int32), np.array([2.0, 1.0, 9.0], "f4"))
    assert vector.dot(other) == pytest.approx(1.25 * 2.0 + 3.0 * 1.0)
    with pytest.raises(ValueError, match="not a sparse vector"):
        SparseVector.from_bytes(vector.to_bytes()[:-4])


def test_a_missing_splade_model_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    registry = ModelRegistry(ModelsConfig(splade=str(tmp_path / "no-such-model")))
    assert registry.get_scorer("splade") is None
    assert any("SPLADE ranker unavailable" in w for w in registry.warnings)


def test_the_registry_loads_a_splade_directory(splade_dir: Path) -> None:
    registry = ModelRegistry(ModelsConfig(splade=str(splade_dir)))
    splade = registry.get_splade()
    assert isinstance(splade, SpladeScorer)
    assert splade.model_id.startswith("splade:")
    assert registry.get_scorer("splade") is splade


def test_models_download_says_a_splade_directory_needs_nothing(splade_dir: Path) -> None:
    from smartsearch_mcp.config import Config
    from smartsearch_mcp.models import download_models

    config = Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False, "splade_candidates": 10},
        models={"splade": str(splade_dir)},
        rank={"scorers": ["lexical"]},
    )
    lines = download_models(config)
    assert any(line.startswith("splade: ") and "nothing to download" in line for line in lines)
