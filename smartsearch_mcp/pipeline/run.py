"""What one recall carries from stage to stage besides the stage values, and how its stages
get a model: at once, or — in a server whose models load in the background — after waiting
for it a bounded time."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline.corpus import EmbedBudget
from smartsearch_mcp.pipeline.token_vectors import TokenBudget

if TYPE_CHECKING:
    from smartsearch_mcp.pipeline.explain import Tracer

LOAD_POLL_S = 0.05  # how often a recall waiting for a loading model looks again


@dataclass
class RecallRun:
    """One recall's budgets, notes and timings, and its trace when it is explained."""

    budget: EmbedBudget
    tokens: TokenBudget  # ColBERT candidates this recall may still encode itself
    sparse_budget: EmbedBudget
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    loading: set[str] = field(default_factory=set)  # configured models not loaded yet
    models_by: float | None = None  # time.monotonic() after which no model is waited for
    memo: dict[str, Any] = field(default_factory=dict)  # values computed once per recall
    trace: Tracer | None = None

    @classmethod
    def start(cls, embed_on_recall: int, model_wait_s: float | None) -> RecallRun:
        """A recall that may embed `embed_on_recall` passages itself and waits for a model
        still loading at most `model_wait_s` (None: as long as loading takes)."""
        run = cls(
            EmbedBudget(embed_on_recall), TokenBudget(embed_on_recall), EmbedBudget(embed_on_recall)
        )
        if model_wait_s is not None:
            run.models_by = time.monotonic() + model_wait_s
        return run


async def get_model(models: ModelRegistry, kind: str, run: RecallRun) -> Any | None:
    """The model of that kind, or None when it cannot be loaded — or, when the recall waits
    for models a bounded time (`run.models_by`), while it is still loading when that time is
    up (it goes on loading in the background; `run.loading` says so)."""
    if run.models_by is not None and not models.loaded(kind):
        models.start_loading([kind])
        while not models.loaded(kind) and time.monotonic() < run.models_by:
            await anyio.sleep(LOAD_POLL_S)
        if not models.loaded(kind):
            run.loading.add(kind)
            return None
    if kind == "spacy":
        return await anyio.to_thread.run_sync(models.get_nlp)
    if kind == "bi_encoder":
        return await anyio.to_thread.run_sync(models.get_bi_encoder)
    return await anyio.to_thread.run_sync(models.get_scorer, kind)  # type: ignore[arg-type]
