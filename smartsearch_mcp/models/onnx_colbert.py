"""A ColBERT shipped as an ONNX file with its tokenizer: token vectors from ONNX Runtime and the
tokenizers library alone, MaxSim in numpy — no torch, no transformers, no sentence-transformers.

Its folder is an ONNX ranker folder (`models/onnx_ranker.py`) whose ranker.json says:

    {"format": 1, "kind": "colbert", "model": "model.int8.onnx", "inputs": [...],
     "query_length": 32, "document_length": 256, "dimension": 128,
     "prompts": {"query": "", "document": ""}, "document_skip_ids": [], "sha256": {...}}

The ONNX graph maps token ids to one unit-length vector per token (encoder, projection,
normalization); a query is cut at `query_length` tokens and a document at `document_length`,
as sentence-transformers' `MultiVectorEncoder` does, and a document's tokens whose ids are in
`document_skip_ids` do not count. `export_onnx_colbert` writes one from a saved
`MultiVectorEncoder` (training/export.py); it refuses a model whose encoding it cannot
reproduce (query expansion, an allowlist of token ids).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smartsearch_mcp.models.onnx import INT8_7BIT_FILE, quantize_per_channel, trace_to_onnx
from smartsearch_mcp.models.onnx_ranker import (
    BATCH_TOKENS,
    CheckedFolder,
    OnnxFolderRanker,
    padded_feeds,
    write_ranker_folder,
)
from smartsearch_mcp.models.scorers import length_sorted_batches, maxsim

log = logging.getLogger(__name__)

KIND = "colbert"
MANIFEST_KEYS = ("query_length", "document_length", "dimension")


class OnnxColbert(OnnxFolderRanker):
    """Late interaction on ONNX Runtime: the `ColbertScorer` interface (score, and documents
    encoded ahead of time: `encode_documents`, `score_encoded`, `model_id`)."""

    name: str = "colbert"
    kind = KIND
    manifest_keys = MANIFEST_KEYS

    def __init__(self, folder: CheckedFolder) -> None:
        super().__init__(folder)
        manifest = folder.manifest
        self._query_tokenizer = folder.tokenizer(int(manifest["query_length"]))
        self._document_tokenizer = folder.tokenizer(int(manifest["document_length"]))
        prompts = manifest.get("prompts") or {}
        self._query_prompt = str(prompts.get("query") or "")
        self._document_prompt = str(prompts.get("document") or "")
        self._skip = np.asarray(manifest.get("document_skip_ids") or [], dtype=np.int64)
        self.dimension = int(manifest["dimension"])
        # names the weights, for keying token vectors stored ahead of time
        self.model_id = f"onnx-colbert:{manifest['sha256'][manifest['model']][:16]}"

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One MaxSim score per text, in input order (query and texts encoded now)."""
        if not texts:
            return []
        with self._lock:
            query_tokens = self._encode_query(query)
            documents = self._encode_documents(texts)
        return maxsim(query_tokens, documents)

    def encode_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The token vectors of each text as a document, float16 (tokens x dimension)."""
        if not texts:
            return []
        with self._lock:
            documents = self._encode_documents(texts)
        return [tokens.astype(np.float16) for tokens in documents]

    def score_encoded(self, query: str, documents: Sequence[np.ndarray | None]) -> list[float]:
        """MaxSim of `query` against documents encoded ahead of time (`encode_documents`);
        NaN for a document given as None (not encoded)."""
        if not documents:
            return []
        with self._lock:
            query_tokens = self._encode_query(query)
        return maxsim(query_tokens, documents)

    def _encode_query(self, query: str) -> np.ndarray:
        encoding = self._query_tokenizer.encode(self._query_prompt + query)
        return self._vectors([encoding], skip=False)[0]

    def _encode_documents(self, texts: Sequence[str]) -> list[np.ndarray]:
        prompt = self._document_prompt
        encodings = self._document_tokenizer.encode_batch([prompt + text for text in texts])
        vectors: list[np.ndarray] = [np.empty((0, self.dimension), np.float32)] * len(texts)
        lengths = [len(e.ids) for e in encodings]
        for rows in length_sorted_batches(lengths, self._batch_size, BATCH_TOKENS):
            for row, tokens in zip(
                rows, self._vectors([encodings[r] for r in rows], skip=True), strict=True
            ):
                vectors[row] = tokens
        return vectors

    def _vectors(self, encodings: list[Any], *, skip: bool) -> list[np.ndarray]:
        """Each encoding's token vectors (float32), its padding and skipped ids left out."""
        feeds = padded_feeds(encodings, self._inputs)
        output = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        kept = []
        for row, encoding in enumerate(encodings):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            keep = np.asarray(encoding.attention_mask, dtype=bool)
            if skip and self._skip.size:
                keep &= ~np.isin(ids, self._skip)
            kept.append(output[row, : len(ids)][keep])
        return kept


def export_onnx_colbert(
    colbert_dir: str | Path,
    out_dir: str | Path,
    *,
    precision: str = "int8",
    extra_files: dict[str, str] | None = None,
    importer: Any = importlib.import_module,
) -> Path:
    """Export the `MultiVectorEncoder` saved in `colbert_dir` to an ONNX ranker folder
    `out_dir` of kind "colbert" (int8 weights per channel, or fp32), with `extra_files`
    (name -> text) beside it. Replaces `out_dir` atomically."""
    if precision not in ("int8", "fp32"):
        raise ValueError(f"precision {precision!r}: int8 or fp32")
    torch = importer("torch")
    sentence_transformers = importer("sentence_transformers")
    model = sentence_transformers.MultiVectorEncoder(
        str(colbert_dir), device="cpu", local_files_only=True
    )
    modules = list(model)
    transformer, mask = modules[0], _scoring_mask(modules, colbert_dir)
    tokenizer = model.tokenizer
    names = [
        n
        for n in ("input_ids", "attention_mask", "token_type_ids")
        if n in tokenizer.model_input_names
    ]
    query_length = transformer.query_length or transformer.max_seq_length
    document_length = transformer.document_length or transformer.max_seq_length
    skip = getattr(mask, "_skiplist_ids", None)
    vectors = _token_vectors_module(modules, mask, names, torch)
    sample = tokenizer(["a question", "a longer passage"], padding=True)
    inputs = tuple(torch.tensor(sample[name]) for name in names)
    dimension = int(vectors(*inputs).shape[-1])

    def export(exported: Path) -> Path:
        exported.mkdir(parents=True)
        plain = exported / "model.onnx"
        axes = {name: {0: "batch", 1: "tokens"} for name in names}
        trace_to_onnx(
            vectors, inputs, plain, {**axes, "token_vectors": {0: "batch", 1: "tokens"}}, torch
        )
        if precision == "fp32":
            return plain
        # a file to ship runs on any CPU: 7-bit weights (see models/onnx.py)
        quantize_per_channel(plain, exported / INT8_7BIT_FILE, importer, seven_bits=True)
        return exported / INT8_7BIT_FILE

    fields = {
        "kind": KIND,
        "inputs": names,
        "query_length": int(query_length),
        "document_length": int(document_length),
        "dimension": dimension,
        "prompts": {task: model.prompts.get(task, "") for task in ("query", "document")},
        "document_skip_ids": [int(i) for i in skip.tolist()] if skip is not None else [],
    }
    target = write_ranker_folder(out_dir, export, precision, tokenizer, fields, extra_files)
    log.info("exported the ColBERT to %s (%s)", target, precision)
    return target


def _scoring_mask(modules: list[Any], colbert_dir: str | Path) -> Any | None:
    """The model's `MultiVectorMask` (None: it has none), refused when the encoding it asks
    for is not reproduced here."""
    transformer = modules[0]
    if getattr(transformer, "query_expansion", None) is not None:
        raise ValueError(f"{colbert_dir}: query expansion is not supported by the ONNX export")
    masks = [m for m in modules if type(m).__name__ == "MultiVectorMask"]
    mask = masks[0] if masks else None
    if mask is not None and mask.keep_only_token_ids:
        raise ValueError(f"{colbert_dir}: keep_only_token_ids is not supported by the ONNX export")
    if mask is not None and set(mask.skiplist_tasks) - {"document"}:
        raise ValueError(f"{colbert_dir}: a query-side skiplist is not supported")
    return mask


def _token_vectors_module(modules: list[Any], mask: Any, names: list[str], torch: Any) -> Any:
    """A module taking the inputs positionally and returning each token's vector (encoder,
    projection, normalization: the model's modules but its scoring mask)."""
    steps = [m for m in modules if m is not mask]

    class TokenVectors(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.steps = torch.nn.ModuleList(steps)

        def forward(self, *inputs: Any) -> Any:
            features = dict(zip(names, inputs, strict=True))
            for step in self.steps:
                features = step(features)
            return features["token_embeddings"]

    return TokenVectors().eval()
