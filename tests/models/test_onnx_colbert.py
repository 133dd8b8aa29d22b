"""A ColBERT as an ONNX ranker folder (models/onnx_colbert.py): the MaxSim scores of the
sentence-transformers model (its prompts and document skiplist included), documents encoded
ahead of time scoring as documents encoded now, loaded by the registry without torch, and a
model whose encoding the export cannot reproduce refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from probes import probe
from tiny_models import RANKING_QUERY as QUERY
from tiny_models import RANKING_TEXTS as TEXTS
from tiny_models import TinyModels, spearman

from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import ColbertScorer, ModelLocation, ModelRegistry
from smartsearch_mcp.models.onnx_colbert import OnnxColbert, export_onnx_colbert
from smartsearch_mcp.models.onnx_ranker import RankerFileError

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
sentence_transformers = pytest.importorskip("sentence_transformers")
if not hasattr(sentence_transformers, "MultiVectorEncoder"):
    pytest.skip("needs sentence-transformers >= 6", allow_module_level=True)

SKIPPED = [".", "?"]
# with the skipped tokens: a document made mostly of them scores on what is left
PUNCTUATED = [*TEXTS, "margaret moved to paris . ?", "where ? . ? ."]


@pytest.fixture(scope="module")
def colbert(tiny_models: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers ColBERT built as training/train_colbert.py builds one, with
    prompts and a document skiplist so that the export must carry both."""
    from training.train_colbert import colbert_from

    model = colbert_from(str(tiny_models.sentence_transformer), query_length=8, document_length=12)
    model.prompts = {"query": "[unused0] ", "document": "[unused1] "}
    mask = next(m for m in model if type(m).__name__ == "MultiVectorMask")
    mask.skiplist_words = SKIPPED
    mask.resolve_with_tokenizer(model.tokenizer)
    folder = tmp_path_factory.mktemp("colbert") / "model"
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def exported(colbert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("onnx-colbert")
    return {p: export_onnx_colbert(colbert, root / p, precision=p) for p in ("fp32", "int8")}


def test_the_fp32_export_gives_the_models_scores_and_int8_its_ranking(
    colbert: Path, exported: dict[str, Path]
) -> None:
    exact = ColbertScorer.load(ModelLocation(str(colbert), str(colbert), "directory")).score(
        QUERY, PUNCTUATED
    )
    fp32 = OnnxColbert.load(exported["fp32"], batch_size=3)
    int8 = OnnxColbert.load(exported["int8"])

    assert fp32.score(QUERY, PUNCTUATED) == pytest.approx(exact, abs=1e-4)
    assert spearman(exact, int8.score(QUERY, PUNCTUATED)) >= 0.9
    assert (fp32.precision, int8.precision, int8.backend) == ("fp32", "int8", "onnxruntime")
    assert fp32.score(QUERY, []) == []


def test_the_manifest_carries_lengths_prompts_and_skipped_ids(exported: dict[str, Path]) -> None:
    manifest = json.loads((exported["int8"] / "ranker.json").read_text())

    assert manifest["kind"] == "colbert"
    assert (manifest["query_length"], manifest["document_length"]) == (8, 12)
    assert manifest["prompts"] == {"query": "[unused0] ", "document": "[unused1] "}
    assert len(manifest["document_skip_ids"]) == len(SKIPPED)
    assert set(manifest["sha256"]) == {"model.int8.onnx", "tokenizer.json"}


def test_documents_encoded_ahead_score_as_documents_encoded_now(
    exported: dict[str, Path],
) -> None:
    colbert = OnnxColbert.load(exported["fp32"])

    documents = colbert.encode_documents(TEXTS)
    stored: list[np.ndarray | None] = [*documents[:-1], None]

    assert all(d.dtype == np.float16 and d.shape[1] == colbert.dimension for d in documents)
    # a document is cut at its length: 12 tokens, skipped ids left out
    assert max(len(d) for d in documents) <= 12
    now = colbert.score(QUERY, TEXTS)
    ahead = colbert.score_encoded(QUERY, stored)
    assert ahead[:-1] == pytest.approx(now[:-1], abs=1e-2)  # float16 storage
    assert np.isnan(ahead[-1])
    assert colbert.model_id.startswith("onnx-colbert:")


def test_query_expansion_is_refused_by_the_export(tiny_models: TinyModels, tmp_path: Path) -> None:
    # the tiny PyLate checkpoint pads queries with [MASK]: an encoding the export cannot run
    with pytest.raises(ValueError, match="query expansion"):
        export_onnx_colbert(tiny_models.colbert, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_ranker_folder_of_the_other_kind_is_refused(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    import shutil

    other = shutil.copytree(exported["int8"], tmp_path / "other")
    manifest = json.loads((other / "ranker.json").read_text())
    (other / "ranker.json").write_text(json.dumps({**manifest, "kind": "cross_encoder"}))

    with pytest.raises(RankerFileError, match="kind 'cross_encoder' is not 'colbert'"):
        OnnxColbert.load(other)


def test_a_manifest_that_leaves_its_model_unhashed_is_refused(
    exported: dict[str, Path], tmp_path: Path
) -> None:
    import shutil

    folder = shutil.copytree(exported["int8"], tmp_path / "unhashed")
    manifest = json.loads((folder / "ranker.json").read_text())
    del manifest["sha256"]["model.int8.onnx"]
    (folder / "ranker.json").write_text(json.dumps(manifest))

    with pytest.raises(RankerFileError, match=r"no SHA-256 for its model file 'model\.int8\.onnx'"):
        OnnxColbert.load(folder)


def test_the_registry_loads_it_as_the_colbert_without_torch(exported: dict[str, Path]) -> None:
    code = f"""
import json, sys
from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import ModelRegistry
registry = ModelRegistry(ModelsConfig(colbert={str(exported["int8"])!r}))
scorer = registry.get_scorer("colbert")
scores = scorer.score("paris", ["paris is in france", "a cat"])
heavy = ("torch", "transformers", "sentence_transformers")
print(json.dumps({{
    "loaded": sorted(m for m in heavy if m in sys.modules),
    "n": len(scores),
    "runs": registry.status("colbert").message,
}}))
"""
    assert probe(code, timeout=180) == {
        "loaded": [],
        "n": 2,
        "runs": "backend: onnxruntime, precision: int8",
    }


def test_the_registry_also_takes_it_in_process(exported: dict[str, Path]) -> None:
    registry = ModelRegistry(ModelsConfig(colbert=str(exported["fp32"])))

    assert isinstance(registry.get_scorer("colbert"), OnnxColbert)
