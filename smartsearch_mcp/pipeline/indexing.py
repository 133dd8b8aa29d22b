"""The vectors recall reads that are computed ahead of it, in the background: bi-encoder
passage (and context) vectors, ColBERT token vectors, SPLADE document vectors — which of them
the configuration uses, how many stored turns still lack them, and embedding those."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from smartsearch_mcp.config import Config
from smartsearch_mcp.models import ModelRegistry
from smartsearch_mcp.pipeline.embeddings import Embeddings
from smartsearch_mcp.pipeline.sparse import SparseVectors
from smartsearch_mcp.pipeline.token_vectors import TokenVectors, stores_tokens


def uses_splade(config: Config) -> bool:
    """Whether SPLADE ranks candidates or is a candidate channel."""
    return "splade" in config.rank.rankers or config.retrieval.splade_candidates > 0


@dataclass
class BackgroundVectors:
    """The stored vectors of one pipeline's configuration."""

    config: Config
    models: ModelRegistry
    embeddings: Embeddings
    token_vectors: TokenVectors
    sparse: SparseVectors

    def in_use(self) -> bool:
        """Whether new turns get vectors in the background: bi-encoder passage vectors or
        ColBERT token vectors or SPLADE document vectors."""
        return (
            bool(self.embeddings.variants())
            or "colbert" in self.config.rank.rankers
            or uses_splade(self.config)
        )

    async def backlog(self) -> int | None:
        """Stored turns still to embed, summed over the vector kinds in use (None: none of
        them is configured and loadable)."""
        bi_encoder = await self._bi_encoder()
        colbert = await self._colbert()
        splade = await self._splade()
        if bi_encoder is None and colbert is None and splade is None:
            return None
        total = await self.embeddings.backlog(bi_encoder) if bi_encoder is not None else 0
        if colbert is not None:
            total += await self.token_vectors.backlog(colbert)
        if splade is not None:
            total += await self.sparse.backlog(splade)
        return total

    async def embed_backlog(
        self, batch: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """Store the vectors recalls computed, then embed stored turns that have no vector
        yet (bi-encoder passage vectors, then ColBERT token vectors, then SPLADE document
        vectors); returns how many passage vectors were stored. `progress` is told how many
        turns each batch covered."""
        done = 0
        bi_encoder = await self._bi_encoder()
        if bi_encoder is not None:
            done += await self.embeddings.embed_backlog(bi_encoder, batch, progress)
        colbert = await self._colbert()
        if colbert is not None:
            done += await self.token_vectors.index_backlog(colbert, progress=progress)
        splade = await self._splade()
        if splade is not None:
            done += await self.sparse.embed_backlog(splade, batch, progress)
        return done

    async def _bi_encoder(self) -> Any | None:
        if not self.embeddings.variants():
            return None
        return await anyio.to_thread.run_sync(self.models.get_bi_encoder)

    async def _colbert(self) -> Any | None:
        if "colbert" not in self.config.rank.rankers:
            return None
        scorer = await anyio.to_thread.run_sync(self.models.get_scorer, "colbert")
        return scorer if stores_tokens(scorer) else None

    async def _splade(self) -> Any | None:
        if not uses_splade(self.config):
            return None
        return await anyio.to_thread.run_sync(self.models.get_splade)
