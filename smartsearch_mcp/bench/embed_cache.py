"""A cache of passage embeddings shared by benchmark runs (`bench … --embed-cache FILE`).

Each run remembers every haystack into a fresh database, so without it every run embeds the
same texts again — about two hours for BEAM on a laptop CPU. Vectors are keyed by the
bi-encoder's `model_id` (weights and dimension) and the SHA-256 of the exact text embedded,
so a changed text, model or passage split simply misses. What a ranker scores is unchanged:
the cached vector is the one the model produced for that very text.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_SCHEMA = """CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    digest BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, digest)
) WITHOUT ROWID"""
_LOOKUP_CHUNK = 500


class EmbeddingCache:
    """Vectors by (model id, text digest) in one SQLite file; safe to use from any thread."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, model: str, texts: Sequence[str]) -> dict[int, bytes]:
        """Cached vectors of `texts` by their index in `texts`; misses are left out."""
        digests = [_digest(text) for text in texts]
        rows: dict[bytes, bytes] = {}
        unique = list(dict.fromkeys(digests))
        with self._lock:
            for start in range(0, len(unique), _LOOKUP_CHUNK):
                chunk = unique[start : start + _LOOKUP_CHUNK]
                marks = ", ".join("?" * len(chunk))
                sql = f"SELECT digest, vector FROM vectors WHERE model = ? AND digest IN ({marks})"
                rows.update(self._db.execute(sql, [model, *chunk]).fetchall())
        return {i: rows[d] for i, d in enumerate(digests) if d in rows}

    def put(self, model: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Remember one vector per text (row i of `vectors` for `texts[i]`)."""
        self.put_blobs(
            model,
            texts,
            [np.asarray(vectors[i], dtype=np.float32).tobytes() for i in range(len(texts))],
        )

    def put_blobs(self, model: str, texts: Sequence[str], blobs: Sequence[bytes]) -> None:
        """Remember one stored value per text (a dense or sparse vector's bytes)."""
        items = [(model, _digest(text), blob) for text, blob in zip(texts, blobs, strict=True)]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", items)
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def wrap(self, bi_encoder: Any) -> CachingEmbedder:
        """`bi_encoder` with its `embed` served from this cache first."""
        return CachingEmbedder(bi_encoder, self)

    def wrap_splade(self, splade: Any) -> CachingSplade:
        """`splade` with its document `encode` served from this cache first."""
        return CachingSplade(splade, self)


class CachingEmbedder:
    """A bi-encoder (`BiEncoderScorer` interface) whose passage embeddings go through an
    `EmbeddingCache`; queries are embedded as usual."""

    name = "bi_encoder"

    def __init__(self, inner: Any, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id: str = inner.model_id
        self.dimension: int = inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, shape (len(texts), dimension)."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        found = self.cache.get(self.model_id, texts)
        for index, blob in found.items():
            out[index] = np.frombuffer(blob, dtype=np.float32)
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            vectors = self.inner.embed([texts[i] for i in missing])
            out[missing] = vectors
            self.cache.put(self.model_id, [texts[i] for i in missing], vectors)
        self.cache.hits += len(found)
        self.cache.misses += len(missing)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.inner.embed_query(text))

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if not texts:
            return []
        return [float(x) for x in self.embed(texts) @ self.embed_query(query)]


class CachingSplade:
    """A SPLADE scorer (`SpladeScorer` interface) whose document vectors go through an
    `EmbeddingCache`; queries are encoded as usual."""

    name = "splade"

    def __init__(self, inner: Any, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id: str = inner.model_id

    def encode(self, texts: Sequence[str]) -> list[Any]:
        from smartsearch_mcp.models.splade import SparseVector

        found = self.cache.get(self.model_id, texts)
        out: list[Any] = [None] * len(texts)
        for index, blob in found.items():
            out[index] = SparseVector.from_bytes(blob)
        missing = [i for i in range(len(texts)) if i not in found]
        if missing:
            vectors = self.inner.encode([texts[i] for i in missing])
            for i, vector in zip(missing, vectors, strict=True):
                out[i] = vector
            self.cache.put_blobs(
                self.model_id, [texts[i] for i in missing], [v.to_bytes() for v in vectors]
            )
        self.cache.hits += len(found)
        self.cache.misses += len(missing)
        return out

    def encode_query(self, text: str) -> Any:
        return self.inner.encode_query(text)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return self.inner.score_encoded(query, self.encode(texts))

    def score_encoded(self, query: str, documents: Sequence[Any]) -> list[float]:
        return self.inner.score_encoded(query, documents)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
