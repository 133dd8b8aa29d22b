"""A cross-encoder as an ONNX ranker folder (models/onnx_ranker.py): the logits of the torch
model, every file checked by its SHA-256 before it is used, loaded by the registry without
torch, and a shipped model resolved by name (models/shipped.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from probes import probe
from tiny_models import MAX_LENGTH, TinyModels, spearman
from tiny_models import RANKING_QUERY as QUERY
from tiny_models import RANKING_TEXTS as TEXTS

from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import CrossEncoderScorer, ModelLocation, ModelRegistry
from smartsearch_mcp.models import shipped as shipped_module
from smartsearch_mcp.models.onnx_ranker import (
    OnnxRanker,
    RankerFileError,
    export_onnx_ranker,
    file_sha256,
)
from smartsearch_mcp.models.resolve import resolve_model

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


@pytest.fixture(scope="module")
def rankers(tiny_models: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("rankers")
    return {
        precision: export_onnx_ranker(
            tiny_models.bert,
            root / precision,
            precision=precision,
            extra_files={"README.md": "card"},
        )
        for precision in ("fp32", "int8")
    }


def torch_scores(tiny_models: TinyModels) -> list[float]:
    location = ModelLocation(str(tiny_models.bert), str(tiny_models.bert), "directory")
    return CrossEncoderScorer.load(location, precision="fp32").score(QUERY, TEXTS)


def test_the_fp32_ranker_gives_the_torch_logits_and_int8_its_ranking(
    tiny_models: TinyModels, rankers: dict[str, Path]
) -> None:
    exact = torch_scores(tiny_models)
    fp32 = OnnxRanker.load(rankers["fp32"], batch_size=2)
    int8 = OnnxRanker.load(rankers["int8"])

    assert fp32.score(QUERY, TEXTS) == pytest.approx(exact, abs=1e-4)
    assert (fp32.precision, int8.precision, int8.backend) == ("fp32", "int8", "onnxruntime")
    assert spearman(exact, int8.score(QUERY, TEXTS)) >= 0.9
    assert fp32.score(QUERY, []) == []


def test_the_folder_lists_every_file_with_its_hash(rankers: dict[str, Path]) -> None:
    manifest = json.loads((rankers["int8"] / "ranker.json").read_text())

    assert set(manifest["sha256"]) == {"model.int8.onnx", "tokenizer.json", "README.md"}
    assert manifest["sha256"]["README.md"] == file_sha256(rankers["int8"] / "README.md")
    assert (manifest["kind"], manifest["max_length"]) == ("cross_encoder", MAX_LENGTH)


def test_a_changed_or_missing_file_is_refused_naming_it(
    rankers: dict[str, Path], tmp_path: Path
) -> None:
    import shutil

    changed = shutil.copytree(rankers["int8"], tmp_path / "changed")
    with (changed / "tokenizer.json").open("a") as tokenizer:
        tokenizer.write(" ")
    with pytest.raises(RankerFileError, match=r"tokenizer.json: SHA-256 .* is not the expected"):
        OnnxRanker.load(changed)
    (changed / "tokenizer.json").unlink()
    with pytest.raises(RankerFileError, match=r"tokenizer\.json: missing"):
        OnnxRanker.load(changed)
    with pytest.raises(RankerFileError, match=r"ranker\.json: cannot be read"):
        OnnxRanker.load(tmp_path)


def test_the_registry_ranks_with_a_ranker_folder_and_says_how_it_runs(
    rankers: dict[str, Path],
) -> None:
    registry = ModelRegistry(ModelsConfig(cross_encoder=str(rankers["int8"])))

    scorer = registry.get_scorer("cross_encoder")

    assert isinstance(scorer, OnnxRanker)
    status = registry.status("cross_encoder")
    assert status is not None and status.ok
    assert status.message == "backend: onnxruntime, precision: int8"


def test_a_ranker_folder_loads_without_torch_or_transformers(rankers: dict[str, Path]) -> None:
    code = f"""
import json, sys
from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import ModelRegistry
registry = ModelRegistry(ModelsConfig(cross_encoder={str(rankers["int8"])!r}))
scores = registry.get_scorer("cross_encoder").score("paris", ["paris is in france", "a cat"])
heavy = ("torch", "transformers", "sentence_transformers")
print(json.dumps({{"loaded": sorted(m for m in heavy if m in sys.modules), "n": len(scores)}}))
"""
    assert probe(code, timeout=180) == {"loaded": [], "n": 2}


def test_a_shipped_model_resolves_by_name_and_its_pinned_hashes_are_checked(
    rankers: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil

    weights = tmp_path / "weights"
    shutil.copytree(rankers["int8"], weights / "tiny-ranker")
    pinned = {
        n: file_sha256(weights / "tiny-ranker" / n) for n in ("model.int8.onnx", "tokenizer.json")
    }
    model = shipped_module.ShippedModel("tiny-ranker", "tiny-ranker", pinned)
    monkeypatch.setattr(shipped_module, "WEIGHTS_DIR", weights)
    monkeypatch.setitem(shipped_module.SHIPPED, "tiny-ranker", model)

    location = resolve_model("Tiny-Ranker", label="Cross-encoder ranker")
    assert (location.source, Path(location.path)) == ("shipped", weights / "tiny-ranker")
    assert "shipped with smartsearch-mcp" in location.describe()
    assert isinstance(ModelRegistry(ModelsConfig(cross_encoder="tiny-ranker")).get_scorer(
        "cross_encoder"), OnnxRanker)  # fmt: skip

    # a model file replaced together with its manifest entry still fails the pinned hash
    folder = weights / "tiny-ranker"
    (folder / "model.int8.onnx").write_bytes(b"not a model")
    manifest = json.loads((folder / "ranker.json").read_text())
    manifest["sha256"]["model.int8.onnx"] = file_sha256(folder / "model.int8.onnx")
    (folder / "ranker.json").write_text(json.dumps(manifest))
    registry = ModelRegistry(ModelsConfig(cross_encoder="tiny-ranker"))
    assert registry.get_scorer("cross_encoder") is None
    assert "reinstall smartsearch-mcp" in " ".join(registry.warnings)
