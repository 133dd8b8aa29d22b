"""Importing smartsearch_mcp.models, or building a registry, imports no model library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ["torch", "sentence_transformers", "transformers", "spacy", "pylate", "huggingface_hub"]
ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import smartsearch_mcp.models as models
from smartsearch_mcp.config import Config
registry = models.ModelRegistry.from_config(Config())
registry.statuses(); registry.warnings
print(json.dumps(sorted(name for name in {heavy} if name in sys.modules)))
"""


def test_importing_the_models_package_imports_no_model_library() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": ""},
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
