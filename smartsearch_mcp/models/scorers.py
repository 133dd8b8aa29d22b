"""The learned rankers behind the `Scorer` protocol: cross-encoder, ColBERT, bi-encoder.

Each scorer wraps one loaded model and is safe to call from several threads: the pipeline runs
scorers in anyio worker threads, and a fast tokenizer must not be used by two threads at once
("Already borrowed"), so every model call holds the scorer's own lock. Different scorers run
in parallel.

Heavy libraries are imported inside `load`, through an `importer` (tests swap it to simulate a
missing package); heavy objects are typed `Any` so this module imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import math
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from smartsearch_mcp.models.imports import quiet_loading_bars
from smartsearch_mcp.models.precision import inference, quantize_int8, resolve_precision
from smartsearch_mcp.models.resolve import ModelLocation, model_identity

log = logging.getLogger(__name__)

Importer = Callable[[str], Any]
ColbertBackend = Literal["auto", "pylate", "sentence_transformers"]
CrossEncoderBackend = Literal["torch", "onnx", "auto"]


# The cross-encoder's batches: at most `batch_size` pairs and about this many tokens
# (padding included). Pairs are sorted by token count, so a batch pads to its own longest.
BATCH_TOKENS = 1024


class CrossEncoderScorer:
    """Scores (query, text) pairs jointly with a sentence-transformers CrossEncoder.

    Returns the raw logits (no sigmoid): rank fusion only needs the order, and raw values
    keep their spread for score-adaptive truncation.

    The pairs are tokenized once, sorted by token count and run in batches of similar
    length, each padded only to its own longest pair (truncated at the model's limit): no
    token is computed that the data does not need. The library's `predict` sorts by
    characters and pads batches of 32; on LoCoMo turns this is about twice as fast (see
    docs/bench/rankers.md).
    """

    name: str = "cross_encoder"

    def __init__(
        self,
        model: Any,
        identity: Any,
        *,
        batch_size: int = 32,
        torch: Any = None,
        precision: str = "fp32",
        onnx: Any = None,
    ) -> None:
        self._model = model
        self._identity = identity  # torch.nn.Identity(): predict() then returns logits
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._torch = torch
        self.precision = precision
        self._network: Any = classifier_network(model) if torch is not None else None
        self._onnx = onnx  # an `OnnxClassifier` run instead of torch
        self.backend = "onnxruntime" if onnx is not None else "torch"
        # torch intra-op threads of this ranker's calls (None: leave torch's setting)
        self.threads: int | None = None

    @classmethod
    def load(
        cls,
        location: ModelLocation,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        precision: str = "fp32",
        backend: CrossEncoderBackend = "torch",
        threads: int | None = None,
        onnx_cache: Path | None = None,
        importer: Importer = importlib.import_module,
    ) -> CrossEncoderScorer:
        """Load a cross-encoder with one output (e.g. an MS MARCO reranker) to run at
        `precision` (see `models.precision`) on torch or, with `backend="onnx"`, on ONNX
        Runtime (`models.onnx`: int8 unless fp32 is asked for; torch when onnxruntime is
        not installed, with a warning). `backend="auto"`: ONNX Runtime int8 on a CPU when
        onnxruntime and onnx are installed and precision is "auto" or "int8", else torch
        (no warning: torch is then the choice)."""
        torch = importer("torch")
        if backend == "auto":
            backend = "onnx" if _onnx_fits(device, precision, importer) else "torch"
        sentence_transformers = importer("sentence_transformers")
        model = sentence_transformers.CrossEncoder(
            location.path, device=device, local_files_only=location.local_files_only
        )
        labels = getattr(model, "num_labels", 1)
        if labels != 1:
            raise ValueError(
                f"a cross-encoder ranker needs one output (num_labels=1), got {labels}"
            )
        onnx = None
        if backend == "onnx" and device == "cpu":
            chosen = "fp32" if precision == "fp32" else "int8"
            onnx = _onnx_classifier(model, location, chosen, threads, torch, importer, onnx_cache)
        if onnx is None:
            chosen = resolve_precision(precision, device)
            if chosen == "int8":
                model = quantize_int8(torch, model)
        scorer = cls(
            model,
            torch.nn.Identity(),
            batch_size=batch_size,
            torch=torch,
            precision=chosen,
            onnx=onnx,
        )
        scorer.threads = threads
        return scorer

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance logit per text, in input order."""
        if not texts:
            return []
        with self._lock, self._precision():
            if self._network is None and self._onnx is None:  # not a plain classifier inside
                logits = self._model.predict(
                    [(query, text) for text in texts],
                    batch_size=self._batch_size,
                    show_progress_bar=False,
                    activation_fn=self._identity,
                    convert_to_numpy=True,
                )
            else:
                logits = self._length_sorted_logits(query, list(texts))
        return [float(x) for x in np.asarray(logits, dtype=np.float64).reshape(len(texts))]

    def _length_sorted_logits(self, query: str, texts: list[str]) -> np.ndarray:
        tokenizer = self._model.tokenizer
        limit = getattr(self._model, "max_seq_length", None) or tokenizer.model_max_length
        encoded = tokenizer([query] * len(texts), texts, truncation=True, max_length=limit)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        logits = np.empty(len(texts), dtype=np.float64)
        with self._torch.inference_mode():
            for rows in length_sorted_batches(lengths, self._batch_size, BATCH_TOKENS):
                padded = {key: [encoded[key][r] for r in rows] for key in encoded}
                if self._onnx is not None:
                    logits[rows] = self._onnx.logits(tokenizer.pad(padded, return_tensors="np"))
                    continue
                batch = tokenizer.pad(padded, return_tensors="pt")
                batch = {k: v.to(self._model.device) for k, v in batch.items()}
                output = self._network(**batch).logits
                logits[rows] = output[:, 0].float().cpu().numpy()
        return logits

    def _precision(self) -> contextlib.AbstractContextManager[None]:
        use_threads(self._torch, self.threads)
        if self._onnx is not None:  # ONNX Runtime has its own precision and threads
            return contextlib.nullcontext()
        return _precision_context(self._torch, self.precision)


class ColbertScorer:
    """Late interaction: query and texts are encoded to one vector per token; a text's score
    is MaxSim, the sum over query tokens of the best dot product with any of its tokens.

    Two backends load the same checkpoints (PyLate format or Stanford ColBERT):
    sentence-transformers >= 6 `MultiVectorEncoder`, and `pylate.models.ColBERT` (pylate 1.x
    pins sentence-transformers 5.x). "auto" picks the former when available. No index is
    built, so pylate's fast-plaid is never needed.
    """

    name: str = "colbert"

    def __init__(
        self,
        model: Any,
        backend: str,
        *,
        batch_size: int = 32,
        torch: Any = None,
        precision: str = "fp32",
        model_id: str = "",
    ) -> None:
        self._model = model
        self.backend = backend
        # names the weights, for keying token vectors stored ahead of time
        self.model_id = model_id
        # torch intra-op threads of this ranker's calls (None: leave torch's setting)
        self.threads: int | None = None
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._torch = torch
        self.precision = precision

    @classmethod
    def load(
        cls,
        location: ModelLocation,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        backend: ColbertBackend = "auto",
        precision: str = "fp32",
        importer: Importer = importlib.import_module,
    ) -> ColbertScorer:
        """Load a ColBERT checkpoint with the chosen (or the available) backend, to run at
        `precision` (see `models.precision`)."""
        if backend == "auto":
            sentence_transformers = importer("sentence_transformers")
            native = getattr(sentence_transformers, "MultiVectorEncoder", None)
            backend = "sentence_transformers" if native is not None else "pylate"
        if backend == "sentence_transformers":
            encoder = importer("sentence_transformers").MultiVectorEncoder
            model = encoder(
                location.path, device=device, local_files_only=location.local_files_only
            )
        else:
            pylate_models = importer("pylate.models")
            model = pylate_models.ColBERT(
                location.path, device=device, local_files_only=location.local_files_only
            )
        log.debug("ColBERT %s loaded with the %s backend", location.name, backend)
        chosen = resolve_precision(precision, device)
        # fp32 needs torch only for the thread count; the backend has imported it by now
        torch = importer("torch") if chosen != "fp32" else sys.modules.get("torch")
        if chosen == "int8":
            model = quantize_int8(torch, model)
        return cls(
            model,
            backend,
            batch_size=batch_size,
            torch=torch,
            precision=chosen,
            model_id=model_identity(location),
        )

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One MaxSim score per text, in input order (query and texts encoded now)."""
        if not texts:
            return []
        with self._lock, self._precision():
            query_tokens, text_tokens = self._encode(query, list(texts))
        return maxsim(query_tokens, text_tokens)

    def encode_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The token vectors of each text as a document, float16 (tokens x dimension): what
        is stored ahead of time so that a recall only encodes the query."""
        if not texts:
            return []
        with self._lock, self._precision():
            encoded = self._encode_documents(list(texts))
        return [_as_array(tokens).astype(np.float16) for tokens in encoded]

    def score_encoded(self, query: str, documents: Sequence[np.ndarray | None]) -> list[float]:
        """MaxSim of `query` against documents encoded ahead of time (`encode_documents`);
        NaN for a document given as None (not encoded)."""
        if not documents:
            return []
        with self._lock, self._precision():
            query_tokens = self._encode_query(query)
        return maxsim(query_tokens, documents)

    def _precision(self) -> contextlib.AbstractContextManager[None]:
        use_threads(self._torch, self.threads)
        return _precision_context(self._torch, self.precision)

    def _encode(self, query: str, texts: list[str]) -> tuple[Any, list[Any]]:
        return self._encode_query(query), self._encode_documents(texts)

    def _encode_query(self, query: str) -> Any:
        options = {"batch_size": 1, "show_progress_bar": False}
        if self.backend == "sentence_transformers":
            return self._model.encode_query([query], **options)[0]
        return self._model.encode([query], is_query=True, **options)[0]

    def _encode_documents(self, texts: list[str]) -> list[Any]:
        options = {"batch_size": self._batch_size, "show_progress_bar": False}
        if self.backend == "sentence_transformers":
            return list(self._model.encode_document(texts, **options))
        return list(self._model.encode(texts, is_query=False, **options))


class BiEncoderScorer:
    """Cosine similarity of normalized sentence embeddings (a SentenceTransformer, or the
    same model run by `pooled.PooledEncoder`).

    Also the embedder for dense retrieval: `embed` turns, `embed_query` the query. `model_id`
    names the weights and dimension, for keying cached embeddings.
    """

    name: str = "bi_encoder"

    def __init__(self, model: Any, *, model_id: str, batch_size: int = 32) -> None:
        self._model = model
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        # what computes the embeddings (fp32 on every backend), for `models` and `doctor`
        backend = getattr(model, "backend", None)
        self.backend = {"onnx": "onnxruntime", "torch": "torch"}.get(
            backend if isinstance(backend, str) else "", "sentence_transformers"
        )
        self.dimension = _embedding_dimension(model)
        self.model_id = f"{model_id}:{self.dimension}"

    @classmethod
    def load(
        cls,
        location: ModelLocation,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = None,
        importer: Importer = importlib.import_module,
    ) -> BiEncoderScorer:
        """Load a sentence-embedding model: without the sentence-transformers package when
        its saved layout allows (`pooled`: seconds less to import), else with it."""
        from smartsearch_mcp.models.pooled import load_pooled

        model: Any = load_pooled(location.path, device=device, threads=threads, importer=importer)
        if model is None:
            sentence_transformers = importer("sentence_transformers")
            quiet_loading_bars(importer)
            model = sentence_transformers.SentenceTransformer(
                location.path, device=device, local_files_only=location.local_files_only
            )
        return cls(model, model_id=model_identity(location), batch_size=batch_size)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, shape (len(texts), dimension)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encode = getattr(self._model, "encode_document", None) or self._model.encode
        with self._lock:
            vectors = encode(
                list(texts),
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def embed_query(self, text: str) -> np.ndarray:
        """The unit-length float32 embedding of a query, shape (dimension,)."""
        encode = getattr(self._model, "encode_query", None) or self._model.encode
        with self._lock:
            vectors = encode(
                [text], show_progress_bar=False, convert_to_numpy=True, normalize_embeddings=True
            )
        return np.asarray(vectors, dtype=np.float32).reshape(self.dimension)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of the query with each text, in input order."""
        if not texts:
            return []
        scores = self.embed(texts) @ self.embed_query(query)
        return [float(x) for x in scores]


def maxsim(query_tokens: Any, texts_tokens: Sequence[Any]) -> list[float]:
    """ColBERT MaxSim: for each text, sum over query token vectors of the largest dot product
    with the text's token vectors (NaN for a text given as None). Accepts numpy arrays or
    (CPU or GPU) torch tensors."""
    query = _as_array(query_tokens)
    scores: list[float] = []
    for tokens in texts_tokens:
        if tokens is None:
            scores.append(math.nan)
            continue
        text = _as_array(tokens)
        if text.shape[0] == 0 or query.shape[0] == 0:
            scores.append(0.0)
            continue
        scores.append(float((query @ text.T).max(axis=1).sum()))
    return scores


def length_sorted_batches(
    lengths: Sequence[int], max_rows: int, max_tokens: int
) -> list[list[int]]:
    """Indices grouped into batches, longest first: each batch holds at most `max_rows`
    items and, padded to its first (longest) item, about `max_tokens` tokens (one item at
    least)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for index in order:
        current = batches[-1] if batches else None
        if (
            current is None
            or len(current) >= max_rows
            or (len(current) + 1) * lengths[current[0]] > max_tokens
        ):
            batches.append([index])
        else:
            current.append(index)
    return batches


def classifier_network(cross_encoder: Any) -> Any | None:
    """The transformers sequence classifier inside a sentence-transformers CrossEncoder
    (None when there is no such single module: then `predict` is used)."""
    try:
        modules = list(cross_encoder)
    except TypeError:
        return None
    if len(modules) != 1:
        return None
    network = getattr(modules[0], "auto_model", None) or getattr(modules[0], "model", None)
    return network if callable(network) and hasattr(network, "config") else None


def _onnx_classifier(
    model: Any,
    location: ModelLocation,
    precision: str,
    threads: int | None,
    torch: Any,
    importer: Importer,
    cache_root: Path | None = None,
) -> Any | None:
    """The cross-encoder exported to ONNX Runtime, or None (with a warning) when onnxruntime
    or onnx is not installed or the model is not a plain transformers classifier."""
    from smartsearch_mcp.models.onnx import load_onnx_classifier

    network = classifier_network(model)
    if network is None:
        log.warning("the cross-encoder is not a plain transformers classifier: runs on torch")
        return None
    try:
        return load_onnx_classifier(
            network,
            model.tokenizer,
            folder=Path(location.path),
            identity=model_identity(location),
            precision=precision,
            threads=threads,
            torch=torch,
            importer=importer,
            cache_root=cache_root,
        )
    except ModuleNotFoundError as exc:
        log.warning(
            "models.cross_encoder_backend = onnx needs %s (pip install 'smartsearch-mcp[onnx]'): "
            "the cross-encoder runs on torch",
            exc.name,
        )
        return None


def _onnx_fits(device: str, precision: str, importer: Importer) -> bool:
    """Whether `backend="auto"` runs the cross-encoder on ONNX Runtime: int8 (or auto) on a
    CPU, with onnxruntime and onnx importable."""
    if device != "cpu" or precision not in ("auto", "int8"):
        return False
    return onnx_importable(importer)


def onnx_importable(importer: Importer = importlib.import_module) -> bool:
    """Whether onnxruntime and onnx (the `onnx` extra) import."""
    try:
        importer("onnxruntime")
        importer("onnx")
    except ImportError:
        return False
    return True


def use_threads(torch: Any, threads: int | None) -> None:
    """Give the calling thread's torch calls `threads` intra-op threads. torch keeps the
    count per thread (OpenMP), so each ranker sets its own in the worker thread it runs in:
    a count set elsewhere does not reach a worker thread that already ran torch."""
    if torch is not None and threads and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _precision_context(torch: Any, precision: str) -> contextlib.AbstractContextManager[None]:
    """bf16 autocast (and no autograd) for a bf16 scorer; nothing added otherwise (the
    libraries' own calls already run without autograd)."""
    if precision == "bf16" and torch is not None:
        return inference(torch, precision)
    return contextlib.nullcontext()


def _as_array(values: Any) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor, maybe on a GPU
        values = values.detach().float().cpu().numpy()
    array = np.asarray(values, dtype=np.float32)
    return array.reshape(-1, array.shape[-1]) if array.ndim != 2 else array


def _embedding_dimension(model: Any) -> int:
    # sentence-transformers 6 renamed get_sentence_embedding_dimension to get_embedding_dimension.
    for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        getter = getattr(model, method, None)
        if getter is not None:
            dimension = getter()
            if dimension:
                return int(dimension)
    probe = model.encode(["dimension probe"], convert_to_numpy=True)
    return int(np.asarray(probe).shape[-1])
