"""A sentence-embedding model run without the sentence-transformers package, and from a
process's second start on without torch.

Importing sentence-transformers pulls in scikit-learn, SciPy, pandas and torch.distributed;
torch and transformers' model code take seconds more: a cold `smartsearch-mcp recall` spent
most of its time importing. Most sentence-embedding models saved by sentence-transformers
(all-MiniLM-L6-v2, all-mpnet-base-v2) are a transformers encoder, mean or CLS pooling and an
optional L2 normalisation: the pooling is a few lines of numpy over the encoder's token
embeddings, which come from

- ONNX Runtime, when an export of this model is in the user cache dir (`onnx_cache_root`,
  keyed by the weights' files) and onnxruntime is installed: no torch import at all;
- else `transformers.AutoModel` on torch; where onnxruntime and onnx are installed the
  encoder is then exported once (seconds, logged) for the processes that come after.

`load_pooled` reads the saved layout and returns None for anything it does not reproduce
exactly (other modules, prompts, another pooling, a hub id, a GPU): the caller then loads
the model with sentence-transformers as before. The embeddings are the library's on both
backends (tests compare them on the same model, to 1e-5).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smartsearch_mcp.models.imports import quiet_loading_bars
from smartsearch_mcp.models.onnx import trace_to_onnx
from smartsearch_mcp.telemetry import switch_off_onnxruntime_events

log = logging.getLogger(__name__)

# How modules.json's types end (sentence_transformers.models.Transformer, ...).
_TRANSFORMER, _POOLING, _NORMALIZE = ".Transformer", ".Pooling", ".Normalize"
_OTHER_POOLING = (
    "pooling_mode_max_tokens",
    "pooling_mode_mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens",
    "pooling_mode_lasttoken",
)


class PooledEncoder:
    """Token embeddings of an encoder (`network`: token ids and mask to token vectors),
    pooled (mean or CLS) and optionally normalised: the `encode` subset `BiEncoderScorer`
    uses of a SentenceTransformer. `backend` says what runs the encoder."""

    def __init__(
        self,
        network: Callable[[np.ndarray, np.ndarray], np.ndarray],
        tokenizer: Any,
        *,
        backend: str,
        pooling: str,
        normalize: bool,
        lower_case: bool,
        dimension: int,
    ) -> None:
        self._network = network
        self._tokenizer = tokenizer
        self.backend = backend
        self._pooling = pooling
        self._normalize = normalize
        self._lower_case = lower_case
        self._dimension = dimension

    def get_embedding_dimension(self) -> int:
        return self._dimension

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        normalize_embeddings: bool = False,
        **_: Any,
    ) -> np.ndarray:
        """Embeddings of `texts` as float32 rows, in input order. Texts are stripped (and
        lower-cased when the model says so) as sentence-transformers does; batches are
        taken longest first so that each pads little."""
        cleaned = [str(text).strip() for text in texts]
        if self._lower_case:
            cleaned = [text.lower() for text in cleaned]
        out = np.zeros((len(cleaned), self._dimension), dtype=np.float32)
        order = sorted(range(len(cleaned)), key=lambda i: -len(cleaned[i]))
        for start in range(0, len(order), max(1, batch_size)):
            chosen = order[start : start + max(1, batch_size)]
            out[chosen] = self._embed([cleaned[i] for i in chosen])
        if normalize_embeddings or self._normalize:
            out = out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def _embed(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        tokens = np.asarray(self._network(ids, mask), dtype=np.float32)
        if self._pooling == "cls":
            return tokens[:, 0]
        weights = mask[:, :, None].astype(np.float32)
        return (tokens * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)


def load_pooled(
    path: str,
    *,
    device: str = "cpu",
    threads: int | None = None,
    importer: Any = None,
    onnx_cache: Path | None = None,
) -> PooledEncoder | None:
    """The model saved by sentence-transformers in directory `path`, when its layout is one
    this module reproduces exactly; else None (with the reason at debug level). `threads`:
    ONNX Runtime's intra-op threads (None: its default); `onnx_cache`: where ONNX exports
    are kept (default: `onnx_cache_root()`)."""
    import importlib

    importer = importer or importlib.import_module
    directory = Path(path)
    reason = _unsupported(directory, device)
    if reason is not None:
        log.debug("loading %s with sentence-transformers: %s", path, reason)
        return None
    modules = _read_json(directory / "modules.json")
    settings = _read_json(directory / "sentence_bert_config.json")
    pooling_dir = directory / next(m["path"] for m in modules if m["type"].endswith(_POOLING))
    pooling_config = _read_json(pooling_dir / "config.json")
    tokenizer = importer("tokenizers").Tokenizer.from_file(str(directory / "tokenizer.json"))
    pad_token = _pad_token(directory)
    pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        log.debug("loading %s with sentence-transformers: no id for %r", path, pad_token)
        return None
    tokenizer.enable_truncation(max_length=int(settings["max_seq_length"]))
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    exported = _export_path(directory, onnx_cache)
    network = _onnx_network(exported, threads, importer) if exported.is_file() else None
    backend = "onnx"
    if network is None:
        network, backend = _torch_network(directory, exported, importer), "torch"
    return PooledEncoder(
        network,
        tokenizer,
        backend=backend,
        pooling="cls" if pooling_config.get("pooling_mode_cls_token") else "mean",
        normalize=any(m["type"].endswith(_NORMALIZE) for m in modules),
        lower_case=bool(settings.get("do_lower_case", False)),
        dimension=int(pooling_config["word_embedding_dimension"]),
    )


def _export_path(directory: Path, onnx_cache: Path | None) -> Path:
    from smartsearch_mcp.models.onnx import onnx_cache_root, weights_digest

    root = onnx_cache if onnx_cache is not None else onnx_cache_root()
    name = directory.parent.name if directory.name == "model" else directory.name
    return root / f"encoder-{name}-{weights_digest(directory, str(directory))}" / "model.onnx"


def _onnx_network(
    exported: Path, threads: int | None, importer: Any
) -> Callable[..., np.ndarray] | None:
    """The exported encoder on ONNX Runtime, or None without onnxruntime (or when the file
    cannot be opened: the torch path then exports it again)."""
    try:
        ort = importer("onnxruntime")
    except ImportError:
        return None
    switch_off_onnxruntime_events(ort)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # No busy-waiting between runs: a query is one short run, and spinning threads would take
    # the cores from the rankers running next (torch) on a laptop's few cores.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(exported), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # a damaged file: remove it, torch takes over
        log.warning("cannot open %s (%s); using torch and exporting it again", exported, exc)
        exported.unlink(missing_ok=True)
        return None
    lock = threading.Lock()

    def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with lock:
            return np.asarray(session.run(None, {"input_ids": ids, "attention_mask": mask})[0])

    return run


def _torch_network(directory: Path, exported: Path, importer: Any) -> Callable[..., np.ndarray]:
    """The encoder on torch (transformers.AutoModel); exported to `exported` for later
    processes when onnxruntime and onnx are installed."""
    torch = importer("torch")
    transformers = importer("transformers")
    quiet_loading_bars(importer)
    model = transformers.AutoModel.from_pretrained(str(directory), local_files_only=True).eval()

    def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            tokens = model(
                input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask)
            ).last_hidden_state
        return np.asarray(tokens.float().numpy())

    _export_for_later(model, exported, torch, importer)
    return run


def _export_for_later(model: Any, exported: Path, torch: Any, importer: Any) -> None:
    """Export the encoder to ONNX once, atomically (a temporary file moved in place), so
    that later processes start without torch. Skipped without onnxruntime and onnx; a
    failure is logged and remembered (`<file>.failed`), never raised."""
    failed = exported.with_name(exported.name + ".failed")
    if exported.is_file() or failed.exists():
        return
    try:
        importer("onnxruntime")
        importer("onnx")
    except ImportError:
        return
    started = time.perf_counter()
    exported.parent.mkdir(parents=True, exist_ok=True)
    handle, work = tempfile.mkstemp(prefix=".export-", suffix=".onnx", dir=exported.parent)
    os.close(handle)
    try:
        sample = torch.ones((2, 8), dtype=torch.long)
        axes = {0: "batch", 1: "tokens"}
        trace_to_onnx(
            _tokens_module(model, torch),
            (sample, sample),
            Path(work),
            {"input_ids": axes, "attention_mask": axes, "tokens": axes},
            torch,
        )
        os.replace(work, exported)
        log.info(
            "exported the bi-encoder to ONNX in %.1f s (%s): later processes load it without torch",
            time.perf_counter() - started,
            exported,
        )
    except Exception as exc:
        log.warning("could not export the bi-encoder to ONNX (torch keeps running it): %s", exc)
        with contextlib.suppress(OSError):
            failed.write_text(f"{exc}\n", encoding="utf-8")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(work)


def _tokens_module(model: Any, torch: Any) -> Any:
    """A module from (input_ids, attention_mask) to the token embeddings: what
    `torch.onnx.export` traces."""

    class TokensOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: Any, mask: Any) -> Any:
            return self.model(input_ids=ids, attention_mask=mask).last_hidden_state

    return TokensOnly().eval()


def _unsupported(directory: Path, device: str) -> str | None:
    """Why the model in `directory` is not one this module reproduces, or None."""
    if device != "cpu":
        return f"device {device}"
    if not directory.is_dir():
        return "not a local directory"
    for name in ("modules.json", "sentence_bert_config.json", "tokenizer.json", "config.json"):
        if not (directory / name).is_file():
            return f"no {name}"
    try:
        modules = _read_json(directory / "modules.json")
        kinds = [m["type"] for m in modules]
        settings = _read_json(directory / "sentence_bert_config.json")
        extra = _read_json_if_there(directory / "config_sentence_transformers.json")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"unreadable layout: {exc}"
    layout = (_TRANSFORMER, _POOLING, _NORMALIZE)
    if len(kinds) not in (2, 3) or not all(map(str.endswith, kinds, layout)):
        return f"modules {kinds}"
    if modules[0].get("path", "") not in ("", "."):
        return "the encoder is not at the top of the directory"
    if not isinstance(settings.get("max_seq_length"), int):
        return "no max_seq_length"
    if extra.get("prompts") or extra.get("default_prompt_name"):
        return "prompts"
    if extra.get("similarity_fn_name") not in (None, "cosine"):
        return f"similarity {extra['similarity_fn_name']}"
    pooling_dir = directory / modules[1].get("path", "")
    try:
        pooling = _read_json(pooling_dir / "config.json")
    except (OSError, ValueError) as exc:
        return f"unreadable pooling config: {exc}"
    mean = bool(pooling.get("pooling_mode_mean_tokens"))
    cls = bool(pooling.get("pooling_mode_cls_token"))
    if mean == cls or any(pooling.get(key) for key in _OTHER_POOLING):
        return "pooling other than mean or CLS alone"
    if pooling.get("include_prompt") is False:
        return "pooling excludes the prompt"
    return None


def _pad_token(directory: Path) -> str:
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        value = _read_json_if_there(directory / name).get("pad_token")
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            return value
    return "[PAD]"


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _read_json_if_there(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    value = _read_json(path)
    return value if isinstance(value, dict) else {}
