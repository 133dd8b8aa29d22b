"""SPLADE document vectors of a scope: read from the store, encoded in the background.

Like the bi-encoder's vectors (`corpus.Embeddings`), each passage's splade(text) is computed
once, ahead of recall, by the background embedding (`embed_backlog`), and stored through the
store's generic `put_embeddings` under the SPLADE model's own key (`SpladeScorer.model_id`),
so a recall only encodes the query. A recall never writes: passages without a stored vector
are encoded within its `EmbedBudget` and kept in memory until the background stores them.

`SparseMatrix` holds a corpus's vectors as flat arrays, so the query's score against every
passage of a scope (the SPLADE candidate channel) is one weighted bincount.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from smartsearch_mcp.models.splade import EMPTY, SparseVector
from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.backlog import EncodingFailed, index_backlog, store_pending
from smartsearch_mcp.pipeline.retrieve import Corpus, ranking_text

if TYPE_CHECKING:
    from smartsearch_mcp.pipeline.corpus import EmbedBudget, PassageCache
    from smartsearch_mcp.store import MemoryStore
    from smartsearch_mcp.types import Passage, Turn

log = logging.getLogger(__name__)

SPARSE_BATCH = 64
PENDING_SPARSE = 50_000


@dataclass
class SparseMatrix:
    """One sparse vector per corpus passage (`known[i]` False: not encoded yet)."""

    vectors: list[SparseVector]
    known: np.ndarray  # bool per passage
    model_id: str
    _flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def empty(cls, size: int, model_id: str) -> SparseMatrix:
        return cls([EMPTY] * size, np.zeros(size, dtype=bool), model_id)

    def extended(self, rows: int) -> SparseMatrix:
        """This matrix with `rows` passages not encoded yet after its own."""
        known = np.concatenate([self.known, np.zeros(rows, dtype=bool)])
        return SparseMatrix([*self.vectors, *[EMPTY] * rows], known, self.model_id)

    def set(self, row: int, vector: SparseVector) -> None:
        self.vectors[row] = vector
        self.known[row] = True
        self._flat = None

    def scores(self, query: SparseVector) -> np.ndarray:
        """dot(query, passage) for every passage (0.0 for those not encoded)."""
        rows, indices, values = self._flattened()
        if not len(rows) or not len(query.indices):
            return np.zeros(len(self.vectors), dtype=np.float64)
        size = max(int(indices.max()), int(query.indices.max())) + 1
        dense = np.zeros(size, dtype=np.float64)
        dense[query.indices] = query.values
        return np.bincount(rows, weights=values * dense[indices], minlength=len(self.vectors))

    def scores_at(self, rows: Sequence[int], query: SparseVector) -> list[float]:
        """dot(query, passage) for the passages at `rows` (NaN for those not encoded)."""
        if not len(query.indices):
            return [0.0 if self.known[r] else math.nan for r in rows]
        dense = np.zeros(int(query.indices.max()) + 1, dtype=np.float64)
        dense[query.indices] = query.values
        out = []
        for row in rows:
            if not self.known[row]:
                out.append(math.nan)
                continue
            vector = self.vectors[row]
            inside = vector.indices < len(dense)
            out.append(float(np.dot(dense[vector.indices[inside]], vector.values[inside])))
        return out

    def _flattened(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._flat is None:
            lengths = [len(v.indices) for v in self.vectors]
            rows = np.repeat(np.arange(len(self.vectors)), lengths)
            if rows.size:
                indices = np.concatenate([v.indices for v in self.vectors])
                values = np.concatenate([v.values for v in self.vectors]).astype(np.float64)
            else:
                indices, values = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float64)
            self._flat = (rows, indices, values)
        return self._flat


class SparseVectors:
    """The SPLADE vectors of the passages recall reads (see the module docstring)."""

    def __init__(
        self, store: MemoryStore, passages: PassageCache, limiter: anyio.CapacityLimiter
    ) -> None:
        self.store = store
        self.passages = passages
        self.limiter = limiter
        # model -> (turn id, start) -> vector bytes, encoded by recalls, not stored yet
        self.pending: dict[str, OrderedDict[tuple[int, int], bytes]] = {}
        self.on_pending: Callable[[], None] | None = None
        # model -> turns the background encoding skips (the model fails on them)
        self.failed: dict[str, set[int]] = {}

    async def fill(
        self, corpus: Corpus, splade: Any, budget: EmbedBudget, among: Sequence[int] | None = None
    ) -> SparseMatrix:
        """The corpus's sparse matrix (kept on it), completed from the store and, within
        `budget`, the model: for every passage, or for those `among` the given rows."""
        matrix = corpus.sparse
        if not isinstance(matrix, SparseMatrix) or matrix.model_id != splade.model_id:
            matrix = SparseMatrix.empty(len(corpus.passages), splade.model_id)
            corpus.sparse = matrix
        wanted = range(len(corpus.passages)) if among is None else among
        rows = [r for r in wanted if not matrix.known[r]]
        if not rows:
            return matrix
        model = splade.model_id
        keys = [corpus.passages[r].key for r in rows]
        stored = await self.store.get_embeddings(model, keys)
        waiting: dict[tuple[int, int], bytes] = self.pending.get(model) or {}
        missing: list[int] = []
        for row, key in zip(rows, keys, strict=True):
            blob = stored.get(key) or waiting.get(key)
            vector = _decoded(blob)
            if vector is None:
                missing.append(row)
            else:
                matrix.set(row, vector)
        if missing:
            budget.skipped.difference_update(
                key for row, key in zip(rows, keys, strict=True) if matrix.known[row]
            )
            granted = budget.allow(len(missing), partial=among is not None)
            budget.skipped.update(corpus.passages[r].key for r in missing[granted:])
            todo = missing[:granted]
            for start in range(0, len(todo), SPARSE_BATCH):
                batch = todo[start : start + SPARSE_BATCH]
                vectors = await off_loop(
                    self.limiter, splade.encode, [corpus.texts[r] for r in batch]
                )
                items = []
                for row, vector in zip(batch, vectors, strict=True):
                    matrix.set(row, vector)
                    turn_id, begin = corpus.passages[row].key
                    items.append((turn_id, begin, vector.to_bytes()))
                self._keep_pending(model, items)
        return matrix

    def _keep_pending(self, model: str, items: Sequence[tuple[int, int, bytes]]) -> None:
        waiting = self.pending.setdefault(model, OrderedDict())
        for turn_id, start, blob in items:
            waiting[(turn_id, start)] = blob
        while len(waiting) > PENDING_SPARSE:
            waiting.popitem(last=False)
        if items and self.on_pending is not None:
            self.on_pending()

    async def backlog(self, splade: Any) -> int:
        return await self.store.count_turns_without_embeddings(splade.model_id)

    async def embed_backlog(
        self, splade: Any, batch: int = 256, progress: Callable[[int], None] | None = None
    ) -> int:
        """Store what recalls encoded, then encode the stored turns that have no SPLADE
        vector yet; returns how many passages were stored."""
        done = await store_pending(self.store, self.pending)
        model = splade.model_id

        async def encode(turns: Sequence[Turn]) -> int:
            return await self._encode_turns(turns, splade)

        done += await index_backlog(
            self.store,
            model,
            encode,
            batch=batch,
            failed=self.failed.setdefault(model, set()),
            skipped="background SPLADE encoding skips turn %d, which the model fails on (%s); "
            "a recall scores it without SPLADE",
            progress=progress,
        )
        return done

    async def _encode_turns(self, turns: Sequence[Turn], splade: Any) -> int:
        passages: list[Passage] = await off_loop(self.limiter, self.passages.split, turns)
        texts = [ranking_text(p) for p in passages]
        try:
            vectors = await off_loop(self.limiter, splade.encode, texts)
        except Exception as exc:  # the model's own failure, told apart from the store's
            raise EncodingFailed(f"{type(exc).__name__}: {exc}") from exc
        items = [(p.key[0], p.key[1], v.to_bytes()) for p, v in zip(passages, vectors, strict=True)]
        await self.store.put_embeddings(model := splade.model_id, items)
        log.debug("stored %d SPLADE vectors (%s)", len(items), model)
        return len(items)


def _decoded(blob: bytes | None) -> SparseVector | None:
    if blob is None:
        return None
    try:
        return SparseVector.from_bytes(blob)
    except ValueError:  # a stored value of another shape: encode it again
        return None
