"""A sentence-embedding model run without the sentence-transformers package.

Importing sentence-transformers pulls in scikit-learn, SciPy, pandas and torch.distributed:
about 4 s of a quiet machine's time (9 s on a busy one) before any model loads, paid by every
`smartsearch-mcp recall` run from the command line. Most sentence-embedding models saved by
sentence-transformers (all-MiniLM-L6-v2, all-mpnet-base-v2) are just a transformers encoder,
mean or CLS pooling and an optional L2 normalisation: that is a few lines over
`transformers.AutoModel` and a `tokenizers` tokenizer, which import in a fraction of it.

`load_pooled` reads the saved layout and returns None for anything it does not reproduce
exactly (other modules, prompts, another pooling, a hub id, a GPU): the caller then loads
the model with sentence-transformers as before. The embeddings are the library's
(tests compare both on the same model).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
    """Token embeddings of a transformers encoder, pooled (mean or CLS) and optionally
    normalised: the `encode` subset `BiEncoderScorer` uses of a SentenceTransformer."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        torch: Any,
        *,
        pooling: str,
        normalize: bool,
        lower_case: bool,
        dimension: int,
    ) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._torch = torch
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
        if normalize_embeddings and not self._normalize:
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            out = out / np.maximum(norms, 1e-12)
        return out

    def _embed(self, texts: list[str]) -> np.ndarray:
        torch = self._torch
        encodings = self._tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long)
        with torch.inference_mode():
            tokens = self._model(input_ids=ids, attention_mask=mask).last_hidden_state
            if self._pooling == "cls":
                pooled = tokens[:, 0]
            else:
                weights = mask.unsqueeze(-1).to(tokens.dtype)
                pooled = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            if self._normalize:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return np.asarray(pooled.float().numpy(), dtype=np.float32)


def load_pooled(path: str, *, device: str = "cpu", importer: Any = None) -> PooledEncoder | None:
    """The model saved by sentence-transformers in directory `path`, when its layout is one
    this module reproduces exactly; else None (with the reason at debug level)."""
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
    tokenizers = importer("tokenizers")
    torch = importer("torch")
    transformers = importer("transformers")
    tokenizer = tokenizers.Tokenizer.from_file(str(directory / "tokenizer.json"))
    pad_token = _pad_token(directory)
    pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        log.debug("loading %s with sentence-transformers: no id for %r", path, pad_token)
        return None
    tokenizer.enable_truncation(max_length=int(settings["max_seq_length"]))
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
    model = transformers.AutoModel.from_pretrained(str(directory), local_files_only=True).eval()
    return PooledEncoder(
        model,
        tokenizer,
        torch,
        pooling="cls" if pooling_config.get("pooling_mode_cls_token") else "mean",
        normalize=any(m["type"].endswith(_NORMALIZE) for m in modules),
        lower_case=bool(settings.get("do_lower_case", False)),
        dimension=int(pooling_config["word_embedding_dimension"]),
    )


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
