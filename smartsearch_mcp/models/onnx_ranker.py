"""A cross-encoder shipped as an ONNX file with its tokenizer: ranked with ONNX Runtime and the
tokenizers library alone — no torch, no transformers, no sentence-transformers import.

An *ONNX ranker folder* holds `ranker.json`, the ONNX model it names and `tokenizer.json`:

    {"format": 1, "kind": "cross_encoder", "model": "model.int8.onnx", "max_length": 256,
     "inputs": ["input_ids", "attention_mask", "token_type_ids"],
     "sha256": {"model.int8.onnx": "…", "tokenizer.json": "…"}}

`export_onnx_ranker` writes one from a trained sentence-transformers CrossEncoder (the
training/ pipeline does); `OnnxRanker.load` checks every file against its SHA-256 before the
model is opened, so a truncated download or an edited file is an error, not silent noise in the
ranking. The rankers this project ships (`models/shipped.py`) are such folders.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np

from smartsearch_mcp.models.onnx import export_classifier
from smartsearch_mcp.models.scorers import classifier_network, length_sorted_batches
from smartsearch_mcp.telemetry import switch_off_onnxruntime_events

log = logging.getLogger(__name__)

RANKER_FILE = "ranker.json"
RANKER_FORMAT = 1
TOKENIZER_FILE = "tokenizer.json"
# Rows of a batch and, padded to its longest row, about this many tokens (as the torch
# cross-encoder's length-sorted batches).
BATCH_ROWS = 32
BATCH_TOKENS = 1024


class RankerFileError(ValueError):
    """An ONNX ranker folder that is incomplete, altered or not one at all."""


def is_onnx_ranker(folder: str | Path) -> bool:
    """Whether `folder` is an ONNX ranker folder (holds a ranker.json)."""
    return (Path(folder) / RANKER_FILE).is_file()


def manifest_kind(folder: str | Path) -> str | None:
    """The `kind` an ONNX ranker folder declares ("cross_encoder", "colbert"), or None when
    `folder` is not one or its manifest cannot be read."""
    try:
        manifest = json.loads((Path(folder) / RANKER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kind = manifest.get("kind") if isinstance(manifest, dict) else None
    return kind if isinstance(kind, str) else None


def read_manifest(folder: Path, kind: str, keys: Sequence[str]) -> dict[str, Any]:
    """The folder's ranker.json, checked for its `kind` and the keys every ranker needs and
    `keys`."""
    path = folder / RANKER_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RankerFileError(f"{path}: cannot be read ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != RANKER_FORMAT:
        raise RankerFileError(f"{path}: not a ranker manifest of format {RANKER_FORMAT}")
    if manifest.get("kind") != kind:
        raise RankerFileError(f"{path}: kind {manifest.get('kind')!r} is not {kind!r}")
    for key in ("model", "inputs", "sha256", *keys):
        if key not in manifest:
            raise RankerFileError(f"{path}: no {key!r}")
    if not isinstance(manifest["sha256"], dict) or manifest["model"] not in manifest["sha256"]:
        raise RankerFileError(f"{path}: no SHA-256 for its model file {manifest['model']!r}")
    return manifest


def open_checked(
    folder: Path,
    kind: str,
    keys: Sequence[str],
    expected: dict[str, str] | None,
    threads: int | None,
    importer: Any,
) -> tuple[dict[str, Any], Any]:
    """(manifest, ONNX Runtime session) of the ranker folder, after checking its files:
    against `expected` (the hashes pinned for a shipped model) when given, and always
    against its manifest."""
    pinned = expected or {}
    verify_files(folder, pinned)
    manifest = read_manifest(folder, kind, keys)
    # a file whose manifest hash is the pinned one was just checked: not read twice
    verify_files(folder, {n: h for n, h in manifest["sha256"].items() if pinned.get(n) != h})
    ort = importer("onnxruntime")
    switch_off_onnxruntime_events(ort)
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(
        str(folder / manifest["model"]), options, providers=["CPUExecutionProvider"]
    )
    return manifest, session


def padded_feeds(encodings: Sequence[Any], names: Sequence[str]) -> dict[str, np.ndarray]:
    """The inputs `names` of a batch of tokenizer encodings, zero-padded to the longest."""
    width = max(len(e.ids) for e in encodings)
    feeds = {}
    for name in names:
        padded = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            values = getattr(encoding, _ENCODING_FIELDS[name])
            padded[row, : len(values)] = values
        feeds[name] = padded
    return feeds


_ENCODING_FIELDS = {
    "input_ids": "ids",
    "attention_mask": "attention_mask",
    "token_type_ids": "type_ids",
}


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_files(folder: Path, expected: dict[str, str]) -> None:
    """Raise `RankerFileError` unless every file has its expected SHA-256."""
    for name, sha in expected.items():
        path = folder / name
        if not path.is_file():
            raise RankerFileError(f"{path}: missing")
        actual = file_sha256(path)
        if actual != sha:
            raise RankerFileError(
                f"{path}: SHA-256 {actual[:12]}… is not the expected {sha[:12]}… "
                "(the file is damaged or was changed; reinstall smartsearch-mcp)"
            )


class OnnxFolderRanker:
    """What the rankers of ONNX ranker folders share: `load` checks the folder's files and
    opens its session; each kind is made from the `CheckedFolder`."""

    kind: ClassVar[str]
    manifest_keys: ClassVar[tuple[str, ...]]
    backend: str = "onnxruntime"

    def __init__(self, folder: CheckedFolder) -> None:
        self._session = folder.session
        self._inputs = list(folder.manifest["inputs"])
        self._batch_size = max(1, folder.batch_size)
        self._lock = threading.Lock()
        self.precision = folder.precision
        self.threads: int | None = None  # set by the registry; ONNX Runtime has its own

    @classmethod
    def load(
        cls,
        folder: str | Path,
        *,
        threads: int | None = None,
        batch_size: int = BATCH_ROWS,
        expected: dict[str, str] | None = None,
        importer: Any = importlib.import_module,
    ) -> Self:
        """Open the ranker in `folder` after checking its files: against `expected` (the
        hashes pinned for a shipped model) when given, and always against its manifest."""
        directory = Path(folder)
        manifest, session = open_checked(
            directory, cls.kind, cls.manifest_keys, expected, threads, importer
        )
        ranker = cls(CheckedFolder(directory, manifest, session, batch_size, importer))
        ranker.threads = threads
        return ranker


@dataclass(frozen=True)
class CheckedFolder:
    """An ONNX ranker folder whose files were checked: its manifest, its model's session, and
    what the ranker is built with."""

    directory: Path
    manifest: dict[str, Any]
    session: Any
    batch_size: int
    importer: Any

    @property
    def precision(self) -> str:
        """Its arithmetic, int8 or fp32, as its model file's name says."""
        return "int8" if "int8" in str(self.manifest["model"]) else "fp32"

    def tokenizer(self, max_length: int) -> Any:
        """Its tokenizer, truncating at `max_length` tokens."""
        return load_tokenizer(self.directory, max_length, self.importer)


class OnnxRanker(OnnxFolderRanker):
    """Scores (query, text) pairs with a cross-encoder on ONNX Runtime: one logit per text.

    Pairs are tokenized together (truncated longest-first at the model's `max_length`, as the
    trainer saw them), sorted by length and run in batches padded to their own longest pair."""

    name: str = "cross_encoder"
    kind = "cross_encoder"
    manifest_keys = ("max_length",)

    def __init__(self, folder: CheckedFolder) -> None:
        super().__init__(folder)
        self._tokenizer = folder.tokenizer(int(folder.manifest["max_length"]))

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One relevance logit per text, in input order."""
        if not texts:
            return []
        with self._lock:
            encodings = self._tokenizer.encode_batch([(query, text) for text in texts])
            logits = np.empty(len(texts), dtype=np.float64)
            lengths = [len(e.ids) for e in encodings]
            for rows in length_sorted_batches(lengths, self._batch_size, BATCH_TOKENS):
                logits[rows] = self._run([encodings[r] for r in rows])
        return [float(x) for x in logits]

    def _run(self, encodings: list[Any]) -> np.ndarray:
        feeds = padded_feeds(encodings, self._inputs)
        return np.asarray(self._session.run(None, feeds)[0], dtype=np.float64)[:, 0]


def load_tokenizer(folder: Path, max_length: int, importer: Any) -> Any:
    """The folder's tokenizer.json (tokenizers library), unpadded, truncating longest-first
    at `max_length` tokens."""
    tokenizer = importer("tokenizers").Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
    return tokenizer


def export_onnx_ranker(
    cross_encoder_dir: str | Path,
    out_dir: str | Path,
    *,
    precision: str = "int8",
    max_length: int | None = None,
    extra_files: dict[str, str] | None = None,
    importer: Any = importlib.import_module,
) -> Path:
    """Export the CrossEncoder saved in `cross_encoder_dir` (one logit) to an ONNX ranker
    folder `out_dir`: the model (int8 per channel, or fp32), tokenizer.json and ranker.json with
    every file's SHA-256. `extra_files` (name -> text, e.g. a model card) are written beside them
    and hashed too. Replaces `out_dir` atomically."""
    if precision not in ("int8", "fp32"):
        raise ValueError(f"precision {precision!r}: int8 or fp32")
    torch = importer("torch")
    sentence_transformers = importer("sentence_transformers")
    model = sentence_transformers.CrossEncoder(str(cross_encoder_dir), device="cpu")
    if getattr(model, "num_labels", 1) != 1:
        raise ValueError("a cross-encoder ranker needs one output (num_labels=1)")
    network = classifier_network(model)
    if network is None:
        raise ValueError(f"{cross_encoder_dir}: no single transformers classifier inside")
    tokenizer = model.tokenizer
    names = [
        n
        for n in ("input_ids", "attention_mask", "token_type_ids")
        if n in tokenizer.model_input_names
    ]
    limit = int(max_length or model.max_seq_length or tokenizer.model_max_length)

    def export(exported: Path) -> Path:  # a file to ship: portable int8 (7-bit weights)
        return export_classifier(
            network.eval(), tokenizer, names, exported, precision, torch, importer, portable=True
        )

    fields = {"kind": "cross_encoder", "max_length": limit, "inputs": names}
    target = write_ranker_folder(out_dir, export, precision, tokenizer, fields, extra_files)
    log.info("exported the cross-encoder to %s (%s)", target, precision)
    return target


def write_ranker_folder(
    out_dir: str | Path,
    export: Callable[[Path], Path],
    precision: str,
    tokenizer: Any,
    fields: dict[str, Any],
    extra_files: dict[str, str] | None,
) -> Path:
    """Write an ONNX ranker folder at `out_dir`, atomically replacing it: the model that
    `export(work_dir)` produces, the tokenizer's tokenizer.json, `extra_files` (name -> text),
    and ranker.json holding `fields` and every file's SHA-256."""
    target = Path(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".ranker-", dir=target.parent))
    try:
        produced = export(work / "export")
        model_name = "model.int8.onnx" if precision == "int8" else "model.onnx"
        folder = work / "ranker"
        folder.mkdir()
        shutil.copyfile(produced, folder / model_name)
        tokenizer.backend_tokenizer.save(str(folder / TOKENIZER_FILE))
        for name, text in (extra_files or {}).items():
            (folder / name).write_text(text, encoding="utf-8")
        hashes = {
            path.name: file_sha256(path) for path in sorted(folder.iterdir()) if path.is_file()
        }
        manifest = {"format": RANKER_FORMAT, **fields, "model": model_name, "sha256": hashes}
        (folder / RANKER_FILE).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        folder.replace(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target
