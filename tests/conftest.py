"""Shared test set-up: the model hub is switched off, tiny local models are built once.

HF_HUB_OFFLINE is set before any Hugging Face library is imported (they read it at import),
so code that would download weights fails at once instead of hanging on retries.
"""

from __future__ import annotations

import os
import sys
import tempfile

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# Servers started by tests answer CLI recalls on sockets of their own, never in the user's
# runtime directory (smartsearch_mcp.recall_socket); mkdtemp makes it 0700.
os.environ["SMARTSEARCH_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="ss-run-")
# Models exported to ONNX (the bi-encoder's fast start, models/pooled.py) go to a directory of
# the run's own, not the user's cache.
os.environ["SMARTSEARCH_ONNX_DIR"] = tempfile.mkdtemp(prefix="ss-onnx-")

from pathlib import Path

import pytest
from hypothesis import settings

# pytest runs with --import-mode=importlib, which leaves sys.path alone: make the helper
# modules next to this file (tiny_models.py) importable from every test directory.
sys.path.insert(0, str(Path(__file__).parent))

from tiny_models import TinyModels, build_tiny_models

# Property tests check what holds, not how fast: a per-example deadline only measures how busy
# the machine is (two cores shared with other jobs made examples pass or fail by timing).
settings.register_profile("smartsearch", deadline=None)
settings.load_profile("smartsearch")


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    """Tiny random BERT models (cross-encoder, sentence-transformers, ColBERT layouts), built
    once per session. Imports torch and transformers on first use."""
    root: Path = tmp_path_factory.mktemp("tiny_models")
    return build_tiny_models(root)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server (tests/postgres_server.py), or the test is skipped, saying why."""
    import postgres_server as pg

    reason = pg.unavailable_reason()
    if reason is not None:
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    with pg.running_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of an empty PostgreSQL database of this test's own."""
    import postgres_server as pg

    with pg.fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the memory of the backend under test lives, for tests that run on both: an
    SQLite file on tmp_path, or an empty PostgreSQL database (skipped when none can be had)."""
    if request.param == "sqlite":
        return str(tmp_path / "memory.db")
    return str(request.getfixturevalue("postgres_url"))
