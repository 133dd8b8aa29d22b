"""Lazy, thread-safe loading of the configured models, degrading with warnings.

A `ModelRegistry` loads each model on first use (or in `preload`'s background thread) and
remembers the outcome: a model that failed is not retried on every query, and its warning is
reported with every recall (`warnings`). Recall never fails because a model is missing.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from smartsearch_mcp.config import ModelsConfig, NlpConfig
from smartsearch_mcp.models.imports import quiet_loading_bars, spacy_without_torch
from smartsearch_mcp.models.onnx_colbert import OnnxColbert
from smartsearch_mcp.models.onnx_ranker import OnnxFolderRanker, OnnxRanker, is_onnx_ranker
from smartsearch_mcp.models.resolve import ModelLocation, describe_load_error, resolve_model
from smartsearch_mcp.models.scorers import (
    BiEncoderScorer,
    ColbertBackend,
    ColbertScorer,
    CrossEncoderBackend,
    CrossEncoderScorer,
    Importer,
)
from smartsearch_mcp.models.shipped import shipped_hashes
from smartsearch_mcp.models.splade import SpladeScorer, resolve_splade

if TYPE_CHECKING:
    from smartsearch_mcp.config import Config
    from smartsearch_mcp.types import Scorer

log = logging.getLogger(__name__)

ScorerKind = Literal["cross_encoder", "colbert", "bi_encoder", "splade"]
ModelKind = Literal["cross_encoder", "colbert", "bi_encoder", "splade", "spacy"]
SCORER_KINDS: tuple[ScorerKind, ...] = get_args(ScorerKind)
MODEL_KINDS: tuple[ModelKind, ...] = get_args(ModelKind)

LABELS: dict[str, str] = {
    "cross_encoder": "Cross-encoder ranker",
    "colbert": "ColBERT ranker",
    "bi_encoder": "Bi-encoder (dense retrieval)",
    "splade": "SPLADE ranker",
    "spacy": "spaCy NER",
}

# The rankers that load from an ONNX ranker folder, by the kind of model configured.
ONNX_RANKERS: dict[str, type[OnnxFolderRanker]] = {
    "cross_encoder": OnnxRanker,
    "colbert": OnnxColbert,
}

# spaCy components recall needs: NER, POS tags and lemmas. The parser is the slowest and is
# not needed.
SPACY_EXCLUDE: tuple[str, ...] = ("parser",)


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """The outcome of loading one model, for `warnings`, `models` and `doctor`."""

    kind: str
    name: str
    location: str | None
    ok: bool
    message: str | None = None  # the warning when not ok; a note (fallbacks taken) when ok
    load_seconds: float | None = None


def configure_torch(
    threads: int = 0, *, parallel_scorers: int = 1, importer: Importer = importlib.import_module
) -> int:
    """Set torch's intra-op thread count; returns the count set.

    `threads` is the CPU budget (0: every core). Scorers run at the same time in
    `parallel_scorers` worker threads and each torch call fans out over the intra-op pool, so
    every call gets `max(1, threads // parallel_scorers)` threads: on a 2-core laptop running
    the cross-encoder and ColBERT together that is 1 each, instead of 4 threads fighting over
    2 cores (oversubscription makes both slower than running them one after the other).
    """
    budget, per_scorer = thread_count(threads, parallel_scorers)
    torch = importer("torch")
    if torch.get_num_threads() != per_scorer:
        torch.set_num_threads(per_scorer)
        log.info(
            "torch intra-op threads: %d (%d cores, %d parallel scorers)",
            per_scorer,
            budget,
            parallel_scorers,
        )
    return per_scorer


def thread_count(threads: int = 0, parallel_scorers: int = 1) -> tuple[int, int]:
    """(the CPU budget, threads per scorer call) for `configure_torch`, without torch."""
    budget = threads if threads > 0 else (os.cpu_count() or 1)
    return budget, max(1, budget // max(1, parallel_scorers))


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    done: bool = False
    value: Any = None
    status: ModelStatus | None = None


class ModelRegistry:
    """Loads and holds the configured models; one instance per server, passed to the pipeline.

    Every getter is safe to call from any thread. The first call for a model loads it (other
    callers wait, unless `wait=False`); later calls return the remembered model or None.
    """

    def __init__(
        self,
        models: ModelsConfig,
        nlp: NlpConfig | None = None,
        *,
        parallel_scorers: int = 1,
        allow_download: bool = True,
        colbert_backend: ColbertBackend = "auto",
        importer: Importer = importlib.import_module,
    ) -> None:
        self.models = models
        self.nlp = nlp if nlp is not None else NlpConfig()
        self.parallel_scorers = parallel_scorers
        self.allow_download = allow_download
        self.colbert_backend = colbert_backend
        self._importer = importer
        self._slots: dict[str, _Slot] = {kind: _Slot() for kind in MODEL_KINDS}
        self._torch_lock = threading.Lock()
        self._torch_configured = False
        self._threads: int | None = None
        self._wrappers: dict[str, Callable[[Any], Any]] = {}
        self._starting = threading.Lock()
        self._started: set[str] = set()  # kinds `start_loading` handed to a thread

    @classmethod
    def from_config(cls, config: Config, **options: Any) -> ModelRegistry:
        """A registry for a full `Config`: the cores are split between the rankers that run
        a model over every candidate in parallel — only the cross-encoder now. ColBERT's and
        the bi-encoder's document vectors are computed ahead of time, so a recall encodes
        only the query with them: splitting the cores 1 + 1 with ColBERT left the
        cross-encoder half the machine for a ColBERT call of ~36 ms (rank stage p50 761 ms
        against 601 ms with both cores each, `bench rankers` on a quiet 2-core machine)."""
        per_query = [s for s in config.rank.scorers if s == "cross_encoder"]
        parallel = max(1, min(config.rank.max_parallel, len(per_query)))
        options.setdefault("parallel_scorers", parallel)
        return cls(config.models, config.nlp, **options)

    def get_scorer(self, kind: ScorerKind, *, wait: bool = True) -> Scorer | None:
        """The scorer of that kind, or None when it cannot be loaded (see `warnings`).

        With `wait=False`, returns None at once while another thread is still loading it.
        """
        if kind not in SCORER_KINDS:
            raise ValueError(f"unknown scorer kind {kind!r}; known: {', '.join(SCORER_KINDS)}")
        return cast("Scorer | None", self._get(kind, wait))

    def get_splade(self, *, wait: bool = True) -> SpladeScorer | None:
        """The SPLADE scorer with its `encode`/`score_encoded`, or None when unavailable."""
        return cast("SpladeScorer | None", self._get("splade", wait))

    def get_bi_encoder(self, *, wait: bool = True) -> BiEncoderScorer | None:
        """The bi-encoder with its `embed`/`embed_query`, or None when unavailable."""
        return cast("BiEncoderScorer | None", self._get("bi_encoder", wait))

    def get_nlp(self, *, wait: bool = True) -> Any | None:
        """The first spaCy pipeline of `nlp.spacy_models` that loads, or None (the analyzer
        then uses its rule-based extractor)."""
        return self._get("spacy", wait)

    def preload(self, kinds: Iterable[str]) -> threading.Thread:
        """Load models in a background daemon thread (e.g. after the MCP handshake), so the
        first recall does not pay for it. Returns the started thread."""
        wanted = [kind for kind in kinds if kind in self._slots]
        thread = threading.Thread(
            target=self._preload, args=(wanted,), name="smartsearch-preload", daemon=True
        )
        thread.start()
        return thread

    def loaded(self, kind: str) -> bool:
        """Whether loading that model is over (loaded, or failed: its getter returns at
        once), without waiting or starting to load it."""
        return self._slots[kind].done

    def start_loading(self, kinds: Iterable[str]) -> None:
        """Load those models in a background daemon thread unless they are loaded or being
        loaded already; returns at once (a server's recall does not wait for a model)."""
        with self._starting:
            wanted = [k for k in kinds if k in self._slots and not self._slots[k].done]
            wanted = [k for k in wanted if k not in self._started]
            self._started.update(wanted)
        if wanted:
            self.preload(wanted)

    def status(self, kind: str) -> ModelStatus | None:
        """How loading that model went, or None when it was not tried yet."""
        return self._slots[kind].status

    def statuses(self) -> list[ModelStatus]:
        """The status of every model tried so far, in kind order."""
        return [slot.status for slot in self._slots.values() if slot.status is not None]

    @property
    def warnings(self) -> list[str]:
        """One warning per model that could not be loaded (to report with each recall)."""
        return [s.message for s in self.statuses() if not s.ok and s.message]

    def wrap(self, kind: str, wrapper: Callable[[Any], Any]) -> None:
        """Hand out `wrapper(model)` instead of the model of that kind, from now on (e.g. a
        bi-encoder whose embeddings go through a benchmark's cache)."""
        slot = self._slots[kind]
        with slot.lock:
            self._wrappers[kind] = wrapper
            if slot.done and slot.value is not None:
                slot.value = wrapper(slot.value)

    def _preload(self, kinds: list[str]) -> None:
        for kind in kinds:
            self._get(kind, wait=True)

    def _get(self, kind: str, wait: bool) -> Any | None:
        slot = self._slots[kind]
        if slot.done:
            return slot.value
        if not slot.lock.acquire(blocking=wait):
            return None
        try:
            if not slot.done:
                slot.value, slot.status = self._load(kind)
                if slot.value is not None and kind in self._wrappers:
                    slot.value = self._wrappers[kind](slot.value)
                slot.done = True
                level = logging.INFO if slot.status.ok else logging.WARNING
                log.log(level, "%s: %s", kind, slot.status.message or "loaded")
            return slot.value
        finally:
            slot.lock.release()

    def _load(self, kind: str) -> tuple[Any | None, ModelStatus]:
        if kind == "spacy":
            return self._load_spacy()
        name = getattr(self.models, kind)
        label = LABELS[kind]
        location: ModelLocation | None = None
        started = time.perf_counter()
        try:
            if kind == "splade":
                location = resolve_splade(name, label=label)
            else:
                location = resolve_model(name, label=label, allow_download=self.allow_download)
            # The bi-encoder and an ONNX ranker folder run on ONNX Runtime: torch is imported
            # only if they need it.
            on_onnx = kind == "bi_encoder" or (
                kind in ONNX_RANKERS and is_onnx_ranker(location.path)
            )
            self._configure_torch(import_torch=not on_onnx)
            scorer = self._load_scorer(kind, location)
            if "torch" in sys.modules:
                self._configure_torch()  # imported by the load: set its threads now
        except Exception as exc:  # any load failure becomes a recorded warning; recall degrades
            message = describe_load_error(label, location, exc)
            log.debug("%s failed to load", kind, exc_info=True)
            where = location.describe() if location else None
            return None, ModelStatus(kind, name, where, ok=False, message=message)
        seconds = time.perf_counter() - started
        note = describe_runtime(scorer)
        return scorer, ModelStatus(kind, name, location.describe(), True, note, seconds)

    def _load_scorer(self, kind: str, location: ModelLocation) -> Any:
        common: dict[str, Any] = {
            "device": self.models.device,
            "batch_size": self.models.batch_size,
            "importer": self._importer,
        }
        if kind in ONNX_RANKERS and is_onnx_ranker(location.path):
            # ONNX Runtime and the tokenizers library only: no transformers, no torch
            return ONNX_RANKERS[kind].load(
                location.path,
                threads=self._threads,
                batch_size=self.models.batch_size,
                expected=shipped_hashes(location.name),
                importer=self._importer,
            )
        if kind != "bi_encoder":  # it may run without transformers (pooled.py)
            quiet_loading_bars(self._importer)
        scorer: CrossEncoderScorer | ColbertScorer
        if kind == "cross_encoder":
            scorer = CrossEncoderScorer.load(
                location,
                precision=self.models.precision,
                backend=cast(CrossEncoderBackend, self.models.cross_encoder_backend),
                threads=self._threads,
                **common,
            )
        elif kind == "colbert":
            scorer = ColbertScorer.load(
                location,
                backend=self.colbert_backend,
                precision=self.models.precision,
                **common,
            )
        elif kind == "splade":
            return SpladeScorer.load(location, **common)
        else:
            return BiEncoderScorer.load(location, threads=self._threads, **common)
        scorer.threads = self._threads  # set again in each worker thread it runs in
        return scorer

    def _configure_torch(self, import_torch: bool = True) -> None:
        with self._torch_lock:
            if not self._torch_configured and not import_torch and "torch" not in sys.modules:
                _, self._threads = thread_count(self.models.torch_threads, self.parallel_scorers)
            elif not self._torch_configured:
                self._threads = configure_torch(
                    self.models.torch_threads,
                    parallel_scorers=self.parallel_scorers,
                    importer=self._importer,
                )
                self._torch_configured = True

    def _load_spacy(self) -> tuple[Any | None, ModelStatus]:
        names = self.nlp.spacy_models
        label = LABELS["spacy"]
        started = time.perf_counter()
        failures: list[str] = []
        try:
            with spacy_without_torch():
                spacy = self._importer("spacy")
        except Exception as exc:  # not installed, or a dependency failing at import (thinc
            # may import torch; a broken torch raises OSError): recall goes on without spaCy
            message = describe_load_error(label, None, exc)
            return None, ModelStatus("spacy", ", ".join(names), None, ok=False, message=message)
        for name in names:
            try:
                nlp = spacy.load(name, exclude=list(SPACY_EXCLUDE))
            except Exception as exc:  # a model that fails to load: note it, try the next one
                failures.append(f"{name}: {_spacy_error(exc)}")
                continue
            note = "fell back past " + "; ".join(failures) if failures else None
            seconds = time.perf_counter() - started
            location = str(getattr(nlp, "path", None) or name)
            return nlp, ModelStatus("spacy", name, location, True, note, seconds)
        tried = "; ".join(failures) if failures else "no spaCy model configured (nlp.spacy_models)"
        message = (
            f"{label} unavailable, using rule-based entity extraction: {tried} "
            "(pip install -e '.[offline]' or python -m spacy download en_core_web_sm)"
        )
        return None, ModelStatus("spacy", ", ".join(names), None, ok=False, message=message)


def describe_runtime(scorer: Any) -> str | None:
    """How a loaded ranker computes, for `models` and `doctor`: its backend and precision."""
    if isinstance(scorer, CrossEncoderScorer | ColbertScorer | OnnxFolderRanker):
        return f"backend: {scorer.backend}, precision: {scorer.precision}"
    if isinstance(scorer, BiEncoderScorer):
        return f"backend: {scorer.backend}, precision: fp32"
    return None


def _spacy_error(exc: Exception) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "[E050]" in text:  # spaCy's "Can't find model": say it plainly
        return "not installed"
    return f"{type(exc).__name__}: {text}"
