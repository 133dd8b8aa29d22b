"""Learned rankers and NLP models, loaded lazily: cross-encoder, ColBERT, bi-encoder, SPLADE,
spaCy.

Importing this package imports no model library (torch, sentence-transformers, spaCy, pylate);
they are imported when a `ModelRegistry` first loads a model.
"""

from smartsearch_mcp.models.manage import (
    ModelDownloadError,
    check_models,
    download_models,
    model_fixes,
)
from smartsearch_mcp.models.registry import (
    MODEL_KINDS,
    SCORER_KINDS,
    ModelKind,
    ModelRegistry,
    ModelStatus,
    ScorerKind,
    configure_torch,
)
from smartsearch_mcp.models.resolve import ModelLocation, ModelUnavailable, resolve_model
from smartsearch_mcp.models.scorers import (
    BiEncoderScorer,
    ColbertScorer,
    CrossEncoderScorer,
    maxsim,
)
from smartsearch_mcp.models.splade import SparseVector, SpladeScorer, resolve_splade

__all__ = [
    "MODEL_KINDS",
    "SCORER_KINDS",
    "BiEncoderScorer",
    "ColbertScorer",
    "CrossEncoderScorer",
    "ModelDownloadError",
    "ModelKind",
    "ModelLocation",
    "ModelRegistry",
    "ModelStatus",
    "ModelUnavailable",
    "ScorerKind",
    "SparseVector",
    "SpladeScorer",
    "check_models",
    "configure_torch",
    "download_models",
    "maxsim",
    "model_fixes",
    "resolve_model",
    "resolve_splade",
]
