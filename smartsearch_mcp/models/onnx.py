"""The cross-encoder on ONNX Runtime, int8 by default (`models.cross_encoder_backend = "onnx"`,
or "auto" when onnxruntime and onnx are installed).

The transformers classifier inside a loaded CrossEncoder is exported once with `torch.onnx`
(from the local weights: nothing is downloaded) and, for int8, dynamically quantized with
onnxruntime's quantizer (weights int8 per output channel, symmetric; activations uint8,
quantized per batch: sentence-transformers' `qint8_avx512_vnni` configuration). Per channel
keeps a trained MiniLM's ranking much closer to fp32 than one scale per tensor (mean Spearman
0.963 against 0.894 on LoCoMo, docs/bench/rankers.md). On an x86 CPU without VNNI (AVX2
only: most laptops before 2021, AMD before Zen 4) ONNX Runtime's uint8 x int8 kernel adds
pairs of products in 16 bits, which overflow with 8-bit weights: the weights are then
quantized to 7 bits (`reduce_range`, as ONNX Runtime advises), and so is every file made to
ship, which must run on any CPU (a random tiny model's int8 ranking against fp32: Spearman
0.78 with 8 bits on an AVX2 CPU, above 0.9 with 7). The files are kept
in the user cache dir under a name derived from the weights' files, so later loads only open
them. Measured on the default preset's cross-encoder shape: see docs/bench/rankers.md.

onnxruntime and onnx are optional (`pip install 'smartsearch-mcp[onnx]'`) and imported here
only, through the `importer` the scorer was loaded with.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from smartsearch_mcp.telemetry import switch_off_onnxruntime_events

log = logging.getLogger(__name__)

OPSET = 17
ONNX_PRECISIONS = ("fp32", "int8")
# The quantized file's name says how it was quantized: a file of another scheme (one scale
# per tensor, before; 8-bit weights on a CPU that needs 7) is not reused.
INT8_FILE = "model.int8-per-channel.onnx"
INT8_7BIT_FILE = "model.int8-per-channel-7bit.onnx"
# x86 flags (as Linux lists them) of int8 dot products that do not saturate
VNNI_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})


ONNX_DIR_ENV = "SMARTSEARCH_ONNX_DIR"


def onnx_cache_root() -> Path:
    """Where exported models live: `$SMARTSEARCH_ONNX_DIR`, else next to the unpacked models
    in the user cache dir."""
    override = os.environ.get(ONNX_DIR_ENV)
    if override:
        return Path(override).expanduser()
    from smartsearch_mcp.models.archived import default_cache_root

    return default_cache_root().parent / "onnx"


def weights_digest(folder: Path, identity: str) -> str:
    """A short digest naming the weights in `folder`: their files' names, sizes and
    modification times, and the model's identity (re-exported when any changes)."""
    digest = hashlib.sha256(identity.encode())
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            if path.is_file():
                stat = path.stat()
                digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]


class OnnxClassifier:
    """An ONNX Runtime session of an exported sequence classifier: logits from token ids."""

    def __init__(self, session: Any, input_names: list[str]) -> None:
        self._session = session
        self.input_names = input_names

    def logits(self, batch: dict[str, Any]) -> np.ndarray:
        """The first logit of each row of a padded batch (numpy or torch arrays)."""
        feeds = {name: np.asarray(batch[name], dtype=np.int64) for name in self.input_names}
        return np.asarray(self._session.run(None, feeds)[0])[:, 0]


def load_onnx_classifier(
    network: Any,
    tokenizer: Any,
    *,
    folder: Path,
    identity: str,
    precision: str,
    threads: int | None,
    torch: Any,
    importer: Any,
    cache_root: Path | None = None,
) -> OnnxClassifier:
    """The classifier `network` as an ONNX Runtime session at `precision` (fp32 or int8),
    exported (and quantized) on first use and cached."""
    if precision not in ONNX_PRECISIONS:
        raise ValueError(f"ONNX Runtime runs fp32 or int8, not {precision!r}")
    ort = importer("onnxruntime")
    switch_off_onnxruntime_events(ort)
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if _takes(tokenizer, n)]
    root = cache_root if cache_root is not None else onnx_cache_root()
    target = root / f"{Path(identity).name or 'model'}-{weights_digest(folder, identity)}"
    model_file = target / (int8_file() if precision == "int8" else "model.onnx")
    if not model_file.is_file():
        export_classifier(network, tokenizer, names, target, precision, torch, importer)
    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
    return OnnxClassifier(session, names)


def int8_file(portable: bool = False, flags: frozenset[str] | None = None) -> str:
    """The name of the int8 file to make (which says its weights' bits): 8-bit weights on a
    CPU whose int8 products do not saturate (x86 with VNNI, or not x86), else 7-bit, and
    7-bit when `portable` (a file made to ship)."""
    from smartsearch_mcp.models.precision import cpu_flags, is_x86

    if portable:
        return INT8_7BIT_FILE
    if not is_x86():
        return INT8_FILE
    return INT8_FILE if (cpu_flags() if flags is None else flags) & VNNI_FLAGS else INT8_7BIT_FILE


def _takes(tokenizer: Any, name: str) -> bool:
    accepted = getattr(tokenizer, "model_input_names", None)
    return name in accepted if accepted else name != "token_type_ids"


def export_classifier(
    network: Any,
    tokenizer: Any,
    names: list[str],
    target: Path,
    precision: str,
    torch: Any,
    importer: Any,
    portable: bool = False,
) -> Path:
    """Export to `target` (model.onnx, and for int8 the file `int8_file(portable)` names),
    atomically: written in a temporary folder beside it, then moved in place. Returns the
    file at `precision`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        plain = work / "model.onnx"
        existing = target / "model.onnx"
        if existing.is_file():
            shutil.copyfile(existing, plain)
        else:
            sample = tokenizer(["a question"] * 2, ["a passage", "another"], padding=True)
            inputs = tuple(torch.tensor(sample[name]) for name in names)
            axes = {name: {0: "batch", 1: "tokens"} for name in names}
            trace_to_onnx(
                _logits_module(network, names, torch),
                inputs,
                plain,
                {**axes, "logits": {0: "batch"}},
                torch,
            )
        made = "model.onnx"
        if precision == "int8":
            made = int8_file(portable)
            quantize_per_channel(plain, work / made, importer, seven_bits=made == INT8_7BIT_FILE)
        target.mkdir(parents=True, exist_ok=True)
        for produced in work.iterdir():
            produced.replace(target / produced.name)
        (target / "model.int8.onnx").unlink(missing_ok=True)  # one scale per tensor, before
        log.info("exported the cross-encoder to ONNX (%s) in %s", precision, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target / made


def quantize_per_channel(source: Path, target: Path, importer: Any, seven_bits: bool) -> None:
    """Quantize the ONNX model at `source` to `target`: weights int8 per output channel,
    symmetric (in 7 bits with `seven_bits`: see the module doc); activations uint8,
    quantized per batch."""
    quantization = importer("onnxruntime.quantization")
    quiet = _DropAdvice()  # the quantizer's advice for image models, on the root logger
    logging.getLogger().addFilter(quiet)
    try:
        quantization.quantize_dynamic(
            str(source),
            str(target),
            weight_type=quantization.QuantType.QInt8,
            per_channel=True,
            reduce_range=seven_bits,
        )
    finally:
        logging.getLogger().removeFilter(quiet)


def trace_to_onnx(
    module: Any, inputs: tuple[Any, ...], path: Path, axes: dict[str, dict[int, str]], torch: Any
) -> None:
    """Export `module` to `path` with torch's tracing exporter at `OPSET`: its inputs and
    then its one output are named as `axes` lists them, with those dynamic axes."""
    names = list(axes)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on transformers' code
        torch.onnx.export(
            module,
            inputs,
            str(path),
            input_names=names[:-1],
            output_names=names[-1:],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


class _DropAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Please consider to run pre-processing")


def _logits_module(network: Any, names: list[str], torch: Any) -> Any:
    """A module taking the inputs positionally and returning the classifier's logits: what
    `torch.onnx.export` traces."""

    class LogitsOnly(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *inputs: Any) -> Any:
            return self.network(**dict(zip(names, inputs, strict=True))).logits

    return LogitsOnly().eval()
