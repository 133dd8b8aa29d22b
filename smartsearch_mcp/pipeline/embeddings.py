"""Passage vectors for the dense channel and the bi-encoder rankers (`Embeddings`): a corpus's
vectors are filled from the store and, within a recall's `EmbedBudget`, from the bi-encoder;
a recall never writes: what it embedded is kept in memory and stored by the background
embedding."""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import numpy as np

from smartsearch_mcp.config import Config
from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.backlog import EncodingFailed, index_backlog, store_pending
from smartsearch_mcp.pipeline.corpus import EmbedBudget, PassageCache, context_texts
from smartsearch_mcp.pipeline.retrieve import (
    Corpus,
    ranking_text,
)
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.store.sqlite import CONTEXT_SUFFIX
from smartsearch_mcp.types import Passage, Turn

log = logging.getLogger(__name__)

EMBED_BATCH = 256
# Vectors a recall embedded itself, kept until the background embedding stores them.
PENDING_VECTORS = 100_000


class Embeddings:
    """Passage vectors for the dense channel and the bi-encoder rankers.

    A recall reads vectors the store holds and embeds, within its budget, those missing; it
    never writes (recall is read-only): what it embedded waits in `pending` — used by later
    recalls — until the background embedding (`embed_backlog`) stores it. Turns the model
    fails on are skipped and counted (`failed`), not retried forever.
    """

    def __init__(
        self,
        store: MemoryStore,
        config: Config,
        passages: PassageCache,
        limiter: anyio.CapacityLimiter,
    ) -> None:
        self.store = store
        self.config = config
        self.passages = passages
        self.limiter = limiter
        # model -> (turn id, start) -> vector bytes, embedded by recalls, not stored yet
        self.pending: dict[str, OrderedDict[tuple[int, int], bytes]] = {}
        # model -> turns the model failed to embed (logged once each)
        self.failed: dict[str, set[int]] = {}
        # Called when vectors wait to be stored (the server wakes its background embedding).
        self.on_pending: Callable[[], None] | None = None

    # ------------------------------------------------------------------ a recall's vectors

    async def fill(self, corpus: Corpus, bi_encoder: Any, budget: EmbedBudget) -> None:
        """Give `corpus` a vector per passage: cached ones from the store, the missing ones
        embedded now if they fit in `budget`, else NaN rows until a later recall (vectors
        the background embedding stored meanwhile are picked up then)."""
        if corpus.vectors is None or corpus.vector_model != bi_encoder.model_id:
            corpus.vectors = _unknown(len(corpus.passages), bi_encoder.dimension)
            corpus.vector_model = bi_encoder.model_id
        await self._complete(corpus.vectors, corpus.passages, corpus.texts, bi_encoder, "", budget)

    async def of_candidates(
        self, corpus: Corpus, indices: list[int], bi_encoder: Any, budget: EmbedBudget
    ) -> np.ndarray:
        """The vectors of the passages at `indices` (NaN rows: not embedded within budget)."""
        if corpus.vectors is not None and corpus.vector_model == bi_encoder.model_id:
            await self._complete(
                corpus.vectors, corpus.passages, corpus.texts, bi_encoder, "", budget, indices
            )
            return corpus.vectors[indices]
        return await self.vectors_for(
            [corpus.passages[i] for i in indices],
            [corpus.texts[i] for i in indices],
            bi_encoder,
            budget=budget,
            partial=True,
        )

    async def context_of_candidates(
        self, corpus: Corpus, indices: list[int], bi_encoder: Any, budget: EmbedBudget
    ) -> np.ndarray:
        """Vectors of the passages with the turn before them (see `context_text`)."""
        if corpus.context is None:
            corpus.context = await self.context_texts(corpus.passages, corpus.texts)
        if self.config.retrieval.mode == "grep" and not corpus.partial:
            await self.fill_context(corpus, bi_encoder, budget)
        if corpus.context_vectors is not None:
            await self.fill_context(corpus, bi_encoder, budget, indices)
            return corpus.context_vectors[indices]
        return await self.vectors_for(
            [corpus.passages[i] for i in indices],
            [corpus.context[i] for i in indices],
            bi_encoder,
            CONTEXT_SUFFIX,
            budget=budget,
            partial=True,
        )

    async def fill_context(
        self,
        corpus: Corpus,
        bi_encoder: Any,
        budget: EmbedBudget,
        among: Sequence[int] | None = None,
    ) -> np.ndarray:
        """The context vectors of every passage of `corpus` (cached on it), completed for all
        passages or for those `among` the given ones (see `_complete` for the budget)."""
        if corpus.context is None:
            corpus.context = await self.context_texts(corpus.passages, corpus.texts)
        if corpus.context_vectors is None:
            corpus.context_vectors = _unknown(len(corpus.passages), bi_encoder.dimension)
        await self._complete(
            corpus.context_vectors,
            corpus.passages,
            corpus.context,
            bi_encoder,
            CONTEXT_SUFFIX,
            budget,
            among,
        )
        return corpus.context_vectors

    async def _complete(
        self,
        matrix: np.ndarray,
        passages: Sequence[Passage],
        texts: Sequence[str],
        bi_encoder: Any,
        variant: str,
        budget: EmbedBudget,
        among: Sequence[int] | None = None,
    ) -> None:
        """Fill the unknown (NaN) rows of a corpus-wide `matrix` from the store and, within
        `budget`, the model: all of them only if all fit, or as many as fit of those `among`
        the given rows (the candidates)."""
        if among is None:
            rows = np.flatnonzero(np.isnan(matrix[:, 0])).tolist()
        else:
            rows = [i for i in among if np.isnan(matrix[i, 0])]
        if rows:
            matrix[rows] = await self.vectors_for(
                [passages[r] for r in rows],
                [texts[r] for r in rows],
                bi_encoder,
                variant,
                budget=budget,
                partial=among is not None,
            )

    async def vectors_for(
        self,
        passages: Sequence[Passage],
        texts: Sequence[str],
        bi_encoder: Any,
        variant: str = "",
        *,
        budget: EmbedBudget | None = None,
        partial: bool = True,
        store: bool = False,
    ) -> np.ndarray:
        """One vector per passage: cached ones (the store's, then those pending), the others
        embedded now — without a `budget`, all of them; with one, as many as it allows, the
        rest NaN rows. What is embedded is stored at once with `store` (the background
        embedding), else kept pending (a recall)."""
        model = bi_encoder.model_id + variant
        keys = [p.key for p in passages]
        cached = await self.store.get_embeddings(model, keys)
        # Read in the worker thread one `get` at a time (atomic under the GIL) while the loop
        # may add to it: a vector is found or not, never half there.
        pending: dict[tuple[int, int], bytes] = self.pending.get(model) or {}
        matrix, missing = await off_loop(
            self.limiter, _decode, keys, cached, pending, bi_encoder.dimension
        )
        if budget is not None:
            budget.skipped.difference_update(
                key for row, key in enumerate(keys) if not np.isnan(matrix[row, 0])
            )
            granted = budget.allow(len(missing), partial=partial)
            budget.skipped.update(keys[r] for r in missing[granted:])
            missing = missing[:granted]
        for start in range(0, len(missing), EMBED_BATCH):
            rows = missing[start : start + EMBED_BATCH]
            try:
                vectors = await off_loop(self.limiter, bi_encoder.embed, [texts[r] for r in rows])
            except Exception as exc:  # the model's own failure, told apart from the store's
                raise EncodingFailed(f"{type(exc).__name__}: {exc}") from exc
            matrix[rows] = vectors
            items = [(keys[r][0], keys[r][1], vectors[j].tobytes()) for j, r in enumerate(rows)]
            if store:
                await self.store.put_embeddings(model, items)
            else:
                self._keep_pending(model, items)
            if budget is not None:
                budget.skipped.difference_update(keys[r] for r in rows)
        return matrix

    def _keep_pending(self, model: str, items: Sequence[tuple[int, int, bytes]]) -> None:
        waiting = self.pending.setdefault(model, OrderedDict())
        for turn_id, start, vector in items:
            waiting[(turn_id, start)] = vector
        while len(waiting) > PENDING_VECTORS:  # the oldest are embedded again if needed
            waiting.popitem(last=False)
        if items and self.on_pending is not None:
            self.on_pending()

    async def context_texts(self, passages: Sequence[Passage], texts: Sequence[str]) -> list[str]:
        return await context_texts(self.store, self.passages, self.limiter, passages, texts)

    # ------------------------------------------------------------------ the background

    def variants(self) -> list[str]:
        """The vector kinds the configured rankers use: "" (the passage) and the context."""
        scorers = self.config.rank.rankers
        variants = []
        if self.config.retrieval.dense or "bi_encoder" in scorers:
            variants.append("")
        if "context" in scorers:
            variants.append(CONTEXT_SUFFIX)
        return variants

    async def backlog(self, bi_encoder: Any) -> int:
        """Stored turns still to embed, summed over the vector kinds in use (turns the model
        failed on included)."""
        total = 0
        for variant in self.variants():
            total += await self.store.count_turns_without_embeddings(bi_encoder.model_id + variant)
        return total

    async def write_pending(self) -> int:
        """Store the vectors recalls embedded; returns how many."""
        return await store_pending(self.store, self.pending)

    async def embed_backlog(
        self,
        bi_encoder: Any,
        batch: int = EMBED_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Store what recalls embedded, then embed stored turns that have no vector yet;
        returns how many passages were stored. A turn the model fails on is skipped (logged
        once, counted in `failed`), so it never blocks the turns after it."""
        done = await self.write_pending()
        for variant in self.variants():
            model = bi_encoder.model_id + variant

            async def embed(turns: Sequence[Turn], variant: str = variant) -> int:
                return await self._embed_turns(turns, bi_encoder, variant)

            done += await index_backlog(
                self.store,
                model,
                embed,
                batch=batch,
                failed=self.failed.setdefault(model, set()),
                skipped="background embedding skips turn %d, which the bi-encoder fails on "
                "(%s); it stays searchable lexically",
                progress=progress,
            )
        return done

    async def _embed_turns(self, turns: Sequence[Turn], bi_encoder: Any, variant: str) -> int:
        if not turns:
            return 0
        passages = await off_loop(self.limiter, self.passages.split, turns)
        texts: Sequence[str] = [ranking_text(p) for p in passages]
        if variant == CONTEXT_SUFFIX:
            texts = await self.context_texts(passages, texts)
        await self.vectors_for(passages, texts, bi_encoder, variant, store=True)
        return len(passages)

    def failures(self) -> int:
        """Turns the background embedding skipped because the model fails on them."""
        return sum(len(turns) for turns in self.failed.values())


def _decode(
    keys: Sequence[tuple[int, int]],
    cached: dict[tuple[int, int], bytes],
    pending: dict[tuple[int, int], bytes],
    dimension: int,
) -> tuple[np.ndarray, list[int]]:
    """The matrix of the vectors found (NaN rows for the others) and the missing rows."""
    matrix = np.full((len(keys), dimension), np.nan, dtype=np.float32)
    missing: list[int] = []
    size = 4 * dimension
    for row, key in enumerate(keys):
        blob = cached.get(key)
        if blob is None or len(blob) != size:
            blob = pending.get(key)
        if blob is not None and len(blob) == size:
            matrix[row] = np.frombuffer(blob, dtype=np.float32)
        else:
            missing.append(row)
    return matrix, missing


def _unknown(rows: int, dimension: int) -> np.ndarray:
    """A vector matrix whose rows are all unknown (NaN) until filled."""
    return np.full((rows, dimension), np.nan, dtype=np.float32)
