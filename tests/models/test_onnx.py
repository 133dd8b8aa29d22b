"""The cross-encoder on ONNX Runtime (models/onnx.py): the same logits in fp32, the same
ranking in int8, exported once from the local weights."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import RANKING_QUERY as QUERY
from tiny_models import RANKING_TEXTS as TEXTS
from tiny_models import TinyModels, spearman

from smartsearch_mcp.config import ConfigError, ModelsConfig
from smartsearch_mcp.models import CrossEncoderScorer, ModelLocation, ModelRegistry
from smartsearch_mcp.models.onnx import INT8_7BIT_FILE, INT8_FILE, int8_file, quantize_per_channel
from smartsearch_mcp.models.registry import describe_runtime

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


@pytest.fixture
def onnx_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "onnx"
    monkeypatch.setattr("smartsearch_mcp.models.onnx.onnx_cache_root", lambda: root)
    return root


def _location(tiny_models: TinyModels) -> ModelLocation:
    return ModelLocation(str(tiny_models.bert), str(tiny_models.bert), "directory")


def test_onnx_fp32_gives_the_logits_of_torch_fp32(
    tiny_models: TinyModels, onnx_cache: Path
) -> None:
    torch_scorer = CrossEncoderScorer.load(_location(tiny_models), precision="fp32")
    onnx_scorer = CrossEncoderScorer.load(
        _location(tiny_models), precision="fp32", backend="onnx", batch_size=4
    )

    assert onnx_scorer.backend == "onnxruntime" and onnx_scorer.precision == "fp32"
    assert onnx_scorer.score(QUERY, TEXTS) == pytest.approx(
        torch_scorer.score(QUERY, TEXTS), abs=1e-4
    )


def test_onnx_int8_keeps_the_fp32_ranking(tiny_models: TinyModels, onnx_cache: Path) -> None:
    reference = CrossEncoderScorer.load(_location(tiny_models), precision="fp32")
    quantized = CrossEncoderScorer.load(_location(tiny_models), precision="auto", backend="onnx")

    exact = reference.score(QUERY, TEXTS)
    approximate = quantized.score(QUERY, TEXTS)

    assert quantized.precision == "int8"
    assert spearman(exact, approximate) >= 0.9
    # int8 shifts every logit by about the same amount (here ~5% of the spread), which
    # leaves the ranking alone; what differs between passages beyond that is small.
    spread = max(exact) - min(exact)
    differences = np.subtract(exact, approximate)
    assert np.max(np.abs(differences)) <= 0.2 * spread
    assert np.max(np.abs(differences - differences.mean())) <= 0.1 * spread
    assert int(np.argmax(approximate)) == int(np.argmax(exact))


def test_the_export_is_made_once_and_reused(tiny_models: TinyModels, onnx_cache: Path) -> None:
    CrossEncoderScorer.load(_location(tiny_models), precision="int8", backend="onnx")
    [exported] = list(onnx_cache.iterdir())
    stamps = {p.name: p.stat().st_mtime_ns for p in exported.iterdir()}

    again = CrossEncoderScorer.load(_location(tiny_models), precision="int8", backend="onnx")

    assert set(stamps) == {"model.onnx", int8_file()}
    assert {p.name: p.stat().st_mtime_ns for p in exported.iterdir()} == stamps
    assert again.backend == "onnxruntime"
    assert not [p for p in onnx_cache.iterdir() if p.name.startswith(".export-")]


def test_without_onnxruntime_the_cross_encoder_runs_on_torch(
    tiny_models: TinyModels, onnx_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def importer(name: str) -> Any:
        if name.startswith("onnxruntime"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return importlib.import_module(name)

    scorer = CrossEncoderScorer.load(
        _location(tiny_models), precision="auto", backend="onnx", importer=importer
    )

    assert scorer.backend == "torch"
    assert "pip install 'smartsearch-mcp[onnx]'" in caplog.text
    assert len(scorer.score(QUERY, TEXTS)) == len(TEXTS)


def test_the_registry_reports_the_onnx_backend_and_its_precision(
    tiny_config: ModelsConfig, onnx_cache: Path
) -> None:
    config = ModelsConfig(
        cross_encoder=tiny_config.cross_encoder, cross_encoder_backend="onnx", precision="int8"
    )
    registry = ModelRegistry(config)

    scorer = registry.get_scorer("cross_encoder")

    assert describe_runtime(scorer) == "backend: onnxruntime, precision: int8"
    status = registry.status("cross_encoder")
    assert status is not None and status.message == "backend: onnxruntime, precision: int8"


def test_bf16_with_the_onnx_backend_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"models\.precision.*ONNX Runtime"):
        ModelsConfig(cross_encoder_backend="onnx", precision="bf16")


def test_an_int8_file_quantized_per_tensor_before_is_replaced_not_reused(
    tiny_models: TinyModels, onnx_cache: Path
) -> None:
    CrossEncoderScorer.load(_location(tiny_models), precision="fp32", backend="onnx")
    [exported] = list(onnx_cache.iterdir())
    (exported / "model.int8.onnx").write_bytes(b"not the per-channel model")

    scorer = CrossEncoderScorer.load(_location(tiny_models), precision="int8", backend="onnx")

    assert {p.name for p in exported.iterdir()} == {"model.onnx", int8_file()}
    assert len(scorer.score(QUERY, TEXTS)) == len(TEXTS)


def test_the_int8_weights_are_quantized_per_output_channel(
    tiny_models: TinyModels, onnx_cache: Path
) -> None:
    import onnx

    CrossEncoderScorer.load(_location(tiny_models), precision="int8", backend="onnx")
    [exported] = list(onnx_cache.iterdir())
    graph = onnx.load(str(exported / int8_file())).graph

    shapes = {i.name: list(i.dims) for i in graph.initializer}
    matrices = {
        name.removesuffix("_quantized"): dims
        for name, dims in shapes.items()
        if name.endswith("_quantized") and len(dims) == 2 and "MatMul" in name
    }
    # every quantized weight matrix of a MatMul has one scale per output column
    assert len(matrices) >= 12  # the tiny BERT's attention and feed-forward weights
    assert all(shapes[f"{name}_scale"] == [dims[1]] for name, dims in matrices.items())


def test_auto_runs_int8_on_onnx_runtime_when_it_is_installed(
    tiny_models: TinyModels, onnx_cache: Path
) -> None:
    reference = CrossEncoderScorer.load(_location(tiny_models), precision="fp32")

    scorer = CrossEncoderScorer.load(_location(tiny_models), precision="auto", backend="auto")

    assert (scorer.backend, scorer.precision) == ("onnxruntime", "int8")
    assert spearman(reference.score(QUERY, TEXTS), scorer.score(QUERY, TEXTS)) >= 0.9


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx"])
def test_auto_without_onnx_runtime_runs_on_torch_and_warns_nothing(
    tiny_models: TinyModels,
    onnx_cache: Path,
    caplog: pytest.LogCaptureFixture,
    missing: str,
) -> None:
    def importer(name: str) -> Any:
        if name == missing or name.startswith(missing + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return importlib.import_module(name)

    scorer = CrossEncoderScorer.load(
        _location(tiny_models), precision="auto", backend="auto", importer=importer
    )

    assert scorer.backend == "torch"
    assert "pip install" not in caplog.text
    assert not onnx_cache.exists()


@pytest.mark.parametrize(("precision", "expected"), [("fp32", "fp32"), ("bf16", "bf16")])
def test_auto_with_a_float_precision_asked_for_runs_on_torch(
    tiny_models: TinyModels, onnx_cache: Path, precision: str, expected: str
) -> None:
    scorer = CrossEncoderScorer.load(_location(tiny_models), precision=precision, backend="auto")

    assert (scorer.backend, scorer.precision) == ("torch", expected)


def test_the_default_preset_runs_its_cross_encoder_on_auto() -> None:
    from smartsearch_mcp.config import Config

    config = Config.load("default")

    assert config.models.cross_encoder_backend == "auto"
    assert ModelsConfig(cross_encoder_backend="auto", precision="bf16").precision == "bf16"


def test_int8_weights_have_7_bits_where_int8_products_saturate_and_in_files_to_ship(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    assert int8_file(flags=frozenset({"avx2", "avx512_vnni"})) == INT8_FILE
    assert int8_file(flags=frozenset({"avx2", "avx_vnni"})) == INT8_FILE
    assert int8_file(flags=frozenset({"avx2", "fma"})) == INT8_7BIT_FILE
    assert int8_file(flags=frozenset()) == INT8_7BIT_FILE  # flags unknown: the safe choice
    assert int8_file(portable=True, flags=frozenset({"avx512_vnni"})) == INT8_7BIT_FILE
    monkeypatch.setattr("platform.machine", lambda: "arm64")
    assert int8_file(flags=frozenset()) == INT8_FILE


def test_seven_bit_weights_stay_within_64(
    tiny_models: TinyModels, onnx_cache: Path, tmp_path: Path
) -> None:
    import onnx

    CrossEncoderScorer.load(_location(tiny_models), precision="fp32", backend="onnx")
    [exported] = list(onnx_cache.iterdir())
    largest = {}
    for seven in (False, True):
        target = tmp_path / f"seven-{seven}.onnx"
        quantize_per_channel(exported / "model.onnx", target, importlib.import_module, seven)
        weights = [
            onnx.numpy_helper.to_array(i)
            for i in onnx.load(str(target)).graph.initializer
            if i.name.endswith("_quantized") and len(i.dims) == 2
        ]
        largest[seven] = max(
            int(np.abs(w.astype(np.int32)).max()) for w in weights if w.dtype == np.int8
        )
    assert largest[True] <= 64 < largest[False] <= 127
