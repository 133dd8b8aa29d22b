"""The benchmark's embedding cache: vectors by model and exact text, reused across runs without
changing any result."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from smartsearch_mcp.bench.datasets import load_locomo_bench
from smartsearch_mcp.bench.embed_cache import CachingEmbedder, EmbeddingCache
from smartsearch_mcp.bench.report import _remember_line
from smartsearch_mcp.bench.runner import RunOptions, run_benchmark
from smartsearch_mcp.config import Config, ModelsConfig
from smartsearch_mcp.models import ModelRegistry

FIXTURES = Path(__file__).parents[1] / "fixtures"


class HashEmbedder:
    """A deterministic stand-in bi-encoder that records what it was asked to embed."""

    name = "bi_encoder"
    dimension = 4

    def __init__(self, model_id: str = "fake:4") -> None:
        self.model_id = model_id
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], dtype=np.uint32) for t in texts
        ]
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(texts), 4) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def test_only_texts_the_cache_lacks_are_embedded_and_vectors_are_the_models(
    tmp_path: Path,
) -> None:
    cache = EmbeddingCache(tmp_path / "vectors.db")
    inner = HashEmbedder()
    embedder = CachingEmbedder(inner, cache)

    first = embedder.embed(["a", "b"])
    again = embedder.embed(["b", "c", "a"])

    assert inner.calls == [["a", "b"], ["c"]]
    np.testing.assert_array_equal(first, HashEmbedder().embed(["a", "b"]))
    np.testing.assert_array_equal(again, HashEmbedder().embed(["b", "c", "a"]))
    assert (cache.hits, cache.misses) == (2, 3)
    assert embedder.model_id == "fake:4" and embedder.dimension == 4


def test_the_cache_persists_in_its_file_and_keeps_models_apart(tmp_path: Path) -> None:
    path = tmp_path / "vectors.db"
    cache = EmbeddingCache(path)
    CachingEmbedder(HashEmbedder(), cache).embed(["kept text"])
    cache.close()

    reopened = EmbeddingCache(path)
    same_model, other_model = HashEmbedder(), HashEmbedder("other:4")
    CachingEmbedder(same_model, reopened).embed(["kept text"])
    CachingEmbedder(other_model, reopened).embed(["kept text"])

    assert same_model.calls == []
    assert other_model.calls == [["kept text"]]
    assert reopened.get("fake:4", ["unknown", "kept text"]).keys() == {1}


def test_a_registry_hands_out_the_wrapped_model_before_and_after_it_loads(
    tiny_models: Any, tmp_path: Path
) -> None:
    config = ModelsConfig(bi_encoder=str(tiny_models.sentence_transformer))
    cache = EmbeddingCache(tmp_path / "vectors.db")
    later = ModelRegistry(config)
    later.wrap("bi_encoder", cache.wrap)
    loaded = ModelRegistry(config)
    plain = loaded.get_bi_encoder()
    loaded.wrap("bi_encoder", cache.wrap)

    for registry in (later, loaded):
        wrapped = registry.get_bi_encoder()
        assert isinstance(wrapped, CachingEmbedder)
        assert registry.get_bi_encoder() is wrapped
    assert plain is not None and loaded.get_bi_encoder().inner is plain  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_a_second_run_embeds_nothing_and_ranks_exactly_the_same(
    tiny_models: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = Config().with_overrides(
        models={"bi_encoder": str(tiny_models.sentence_transformer)},
        nlp={"spacy_models": []},
        rank={"scorers": ["bi_encoder", "context", "lexical"]},
        truncation={"tokenizer": "estimate"},
    )
    benchmark = load_locomo_bench(FIXTURES / "locomo")
    options = RunOptions(budgets=(200,), progress=False, embed_cache=tmp_path / "vectors.db")

    first = await run_benchmark(benchmark, config, options)
    cache = EmbeddingCache(tmp_path / "vectors.db")
    stored = cache._db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    cache.close()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="smartsearch_mcp.bench.runner"):
        second = await run_benchmark(benchmark, config, options)

    assert stored > 0
    assert "hits, 0 misses" in caplog.text
    embedded = sum(h["embedded_passages"] for h in second.haystacks)
    assert embedded > 0
    assert sum(h["embed_cache_hits"] for h in second.haystacks) == embedded
    line = _remember_line(second.haystacks)
    assert f"{embedded:,} of the vectors came from `--embed-cache`" in line
    assert second.rankers == first.rankers and "bi_encoder" in first.rankers
    keys = ("candidates", "systems", "candidate_recall")
    for a, b in zip(first.outcomes, second.outcomes, strict=True):
        assert {k: a[k] for k in keys} == {k: b[k] for k in keys}


class CountingSplade:
    """A stand-in SPLADE scorer: one weight per distinct character of the text."""

    name = "splade"
    model_id = "fake-splade:1"

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str]) -> list[Any]:
        from smartsearch_mcp.models.splade import SparseVector

        self.calls.append(list(texts))
        out = []
        for text in texts:
            ids = np.array(sorted({ord(c) for c in text}), dtype=np.int32)
            out.append(SparseVector(ids, np.ones(len(ids), dtype=np.float32)))
        return out


def test_splade_document_vectors_are_cached_like_embeddings(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "vectors.db")
    inner = CountingSplade()
    splade = cache.wrap_splade(inner)
    first = splade.encode(["ab", "cd"])
    again = splade.encode(["cd", "ef", "ab"])
    assert inner.calls == [["ab", "cd"], ["ef"]]
    assert [v.indices.tolist() for v in again] == [[99, 100], [101, 102], [97, 98]]
    assert first[0].indices.tolist() == again[2].indices.tolist()
    assert (cache.hits, cache.misses) == (2, 3)
