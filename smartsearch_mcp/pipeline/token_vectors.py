"""ColBERT document token vectors, computed ahead of time so that a recall encodes only its
query and runs MaxSim.

A passage's token vectors are computed in the background after `remember` (as the
bi-encoder's passage vectors are) and stored through the store's generic embeddings API under
a model key of their own, "colbert:<model id>", keyed like every passage vector by (turn id,
passage start). One value per passage, compact: an 8-byte header (token count and dimension,
little-endian uint32) and then the tokens x dimension values as float16 (96-dim tokens: 192
bytes per token).

A recall reads the stored vectors of its candidates and encodes, within its budget
(`rank.embed_on_recall`), those missing — in the ColBERT ranker's worker thread, alongside the
other rankers. It never writes: what it encoded waits in `pending` until the background
indexing stores it. A passage's vectors are the same whether the background or a recall
computed them (the same `encode_documents`, rounded to float16 either way), so its score
is too.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import numpy as np

from smartsearch_mcp.pipeline import off_loop
from smartsearch_mcp.pipeline.backlog import EncodingFailed, index_backlog, store_pending
from smartsearch_mcp.pipeline.retrieve import ranking_text
from smartsearch_mcp.store import MemoryStore
from smartsearch_mcp.types import Passage, Turn

log = logging.getLogger(__name__)

MODEL_PREFIX = "colbert:"
HEADER = np.dtype("<u4")
HEADER_BYTES = 2 * HEADER.itemsize
INDEX_BATCH = 64  # turns per background batch: small, so recalls get the CPU back soon
# Token vectors a recall encoded itself, kept until the background indexing stores them
# (about 7 KB each for a chat turn at 96 dimensions).
PENDING_PASSAGES = 20_000

Key = tuple[int, int]


def pack_tokens(tokens: np.ndarray) -> bytes:
    """A passage's token vectors (tokens x dimension) as stored: header, then float16."""
    matrix = np.asarray(tokens)
    if matrix.ndim != 2:
        raise ValueError(f"token vectors must be a 2-d matrix, got shape {matrix.shape}")
    header = np.array(matrix.shape, dtype=HEADER).tobytes()
    return header + np.ascontiguousarray(matrix, dtype="<f2").tobytes()


def unpack_tokens(blob: bytes) -> np.ndarray | None:
    """The float16 token vectors of a stored value, or None when it is not one (a value
    written by another format, cut short): the passage is then encoded again."""
    if len(blob) < HEADER_BYTES:
        return None
    tokens, dimension = (int(x) for x in np.frombuffer(blob, dtype=HEADER, count=2))
    if dimension == 0 or len(blob) != HEADER_BYTES + 2 * tokens * dimension:
        return None
    values = np.frombuffer(blob, dtype="<f2", offset=HEADER_BYTES)
    return values.reshape(tokens, dimension)


def model_key(colbert: Any) -> str:
    """The embeddings-table model key of a ColBERT's token vectors."""
    return MODEL_PREFIX + str(colbert.model_id)


def stores_tokens(scorer: Any) -> bool:
    """Whether a ColBERT scorer can score token vectors computed ahead of time."""
    return all(hasattr(scorer, name) for name in ("encode_documents", "score_encoded", "model_id"))


@dataclass
class TokenBudget:
    """How many candidates without stored token vectors one recall may still encode; those
    left out get no ColBERT score (NaN: last in its ordering) and are reported."""

    remaining: int
    skipped: int = 0

    def warning(self) -> str | None:
        if not self.skipped:
            return None
        return (
            f"{self.skipped} candidate(s) have no ColBERT token vectors yet, more than a recall "
            "encodes itself (rank.embed_on_recall), so ColBERT left them out (the other rankers "
            "still scored them); the server encodes new turns in the background, "
            "`smartsearch-mcp embed` does it now"
        )


@dataclass
class CandidateTokens:
    """The candidates' token vectors for one recall: those found, and the rows to encode in
    the ColBERT ranker's worker thread (`score`)."""

    model: str
    keys: list[Key]
    texts: list[str]
    documents: list[np.ndarray | None]
    to_encode: list[int]
    encoded: list[tuple[int, int, bytes]] = field(default_factory=list)

    @property
    def unscored(self) -> bool:
        """No candidate has token vectors, and none is to be encoded now."""
        return not self.to_encode and all(d is None for d in self.documents)

    def score(self, colbert: Any, query: str) -> list[float]:
        """MaxSim of `query` against every candidate, after encoding the missing ones (in
        the calling thread; NaN for those left out by the budget)."""
        if self.to_encode:
            vectors = colbert.encode_documents([self.texts[r] for r in self.to_encode])
            for row, tokens in zip(self.to_encode, vectors, strict=True):
                self.documents[row] = tokens
                turn_id, start = self.keys[row]
                self.encoded.append((turn_id, start, pack_tokens(tokens)))
        return [float(x) for x in colbert.score_encoded(query, self.documents)]


class TokenVectors:
    """Stored ColBERT token vectors: what recalls read, and the background indexing."""

    def __init__(
        self,
        store: MemoryStore,
        split: Callable[[Sequence[Turn]], list[Passage]],
        limiter: anyio.CapacityLimiter,
    ) -> None:
        self.store = store
        self.split = split
        self.limiter = limiter
        # model key -> (turn id, start) -> packed vectors encoded by recalls, not stored yet
        self.pending: dict[str, OrderedDict[Key, bytes]] = {}
        self.failed: dict[str, set[int]] = {}
        # Called when encoded vectors wait to be stored (the server wakes its background).
        self.on_pending: Callable[[], None] | None = None

    # ------------------------------------------------------------------ a recall's vectors

    async def of_candidates(
        self,
        colbert: Any,
        passages: Sequence[Passage],
        texts: Sequence[str],
        budget: TokenBudget,
    ) -> CandidateTokens:
        """The candidates' stored (or pending) token vectors, and which of the missing ones
        this recall encodes (as many as `budget` allows, in candidate order)."""
        model = model_key(colbert)
        keys = [p.key for p in passages]
        stored = await self.store.get_embeddings(model, keys)
        pending: dict[Key, bytes] = self.pending.get(model) or {}
        documents, missing = await off_loop(self.limiter, _unpack_all, keys, stored, pending)
        granted = min(len(missing), max(0, budget.remaining))
        budget.remaining -= granted
        budget.skipped += len(missing) - granted
        return CandidateTokens(model, keys, list(texts), documents, missing[:granted])

    def keep(self, found: CandidateTokens) -> None:
        """Keep what a recall encoded until the background stores it (call on the loop)."""
        if not found.encoded:
            return
        waiting = self.pending.setdefault(found.model, OrderedDict())
        for turn_id, start, blob in found.encoded:
            waiting[(turn_id, start)] = blob
        while len(waiting) > PENDING_PASSAGES:  # the oldest are encoded again if needed
            waiting.popitem(last=False)
        if self.on_pending is not None:
            self.on_pending()

    # ------------------------------------------------------------------ the background

    async def backlog(self, colbert: Any) -> int:
        """Stored turns whose passages have no token vectors yet."""
        return await self.store.count_turns_without_embeddings(model_key(colbert))

    async def write_pending(self) -> int:
        """Store the token vectors recalls encoded; returns how many passages."""
        return await store_pending(self.store, self.pending)

    async def index_backlog(
        self,
        colbert: Any,
        batch: int = INDEX_BATCH,
        progress: Callable[[int], None] | None = None,
    ) -> int:
        """Store what recalls encoded, then encode and store the token vectors of stored
        turns that have none yet; returns how many passages were stored. A turn the model
        fails on is skipped (logged once, counted in `failed`)."""
        done = await self.write_pending()
        model = model_key(colbert)

        async def index(turns: Sequence[Turn]) -> int:
            return await self._index_turns(turns, colbert, model)

        done += await index_backlog(
            self.store,
            model,
            index,
            batch=batch,
            failed=self.failed.setdefault(model, set()),
            skipped="background ColBERT indexing skips turn %d, which the model fails on (%s); "
            "a recall scores it without ColBERT",
            progress=progress,
        )
        return done

    async def _index_turns(self, turns: Sequence[Turn], colbert: Any, model: str) -> int:
        if not turns:
            return 0
        passages = await off_loop(self.limiter, self.split, turns)
        texts = [ranking_text(p) for p in passages]
        try:
            vectors = await off_loop(self.limiter, colbert.encode_documents, texts)
        except Exception as exc:  # the model's own failure, told apart from the store's
            raise EncodingFailed(f"{type(exc).__name__}: {exc}") from exc
        items = await off_loop(self.limiter, _packed, passages, vectors)
        await self.store.put_embeddings(model, items)
        return len(items)

    def failures(self) -> int:
        """Turns the background indexing skipped because the model fails on them."""
        return sum(len(turns) for turns in self.failed.values())


def _unpack_all(
    keys: Sequence[Key], stored: dict[Key, bytes], pending: dict[Key, bytes]
) -> tuple[list[np.ndarray | None], list[int]]:
    documents: list[np.ndarray | None] = []
    missing: list[int] = []
    for row, key in enumerate(keys):
        tokens = None
        for source in (stored, pending):
            blob = source.get(key)
            if blob is not None and (tokens := unpack_tokens(blob)) is not None:
                break
        documents.append(tokens)
        if tokens is None:
            missing.append(row)
    return documents, missing


def _packed(
    passages: Sequence[Passage], vectors: Sequence[np.ndarray]
) -> list[tuple[int, int, bytes]]:
    return [
        (p.key[0], p.key[1], pack_tokens(tokens))
        for p, tokens in zip(passages, vectors, strict=True)
    ]
