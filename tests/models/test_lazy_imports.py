"""Importing smartsearch_mcp.models, or building a registry, imports no model library."""

from __future__ import annotations

from probes import probe

HEAVY = ["torch", "sentence_transformers", "transformers", "spacy", "pylate", "huggingface_hub"]

PROBE = """
import json, sys
import smartsearch_mcp.models as models
from smartsearch_mcp.config import Config
registry = models.ModelRegistry.from_config(Config())
registry.statuses(); registry.warnings
print(json.dumps(sorted(name for name in {heavy} if name in sys.modules)))
"""


def test_importing_the_models_package_imports_no_model_library() -> None:
    assert probe(PROBE.format(heavy=HEAVY), timeout=60) == []
