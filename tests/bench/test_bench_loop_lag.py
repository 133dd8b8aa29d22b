"""`smartsearch-mcp bench loop-lag` end to end on the fixture slices: a real HTTP server
subprocess, one client recalling while another lists tools."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smartsearch_mcp.bench.cli import run_bench
from smartsearch_mcp.config import Config

pytestmark = pytest.mark.slow

REPO = Path(__file__).parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def test_loop_lag_bench_times_cheap_requests_while_another_client_recalls(
    lexical_config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), path) if p))
    out = tmp_path / "lag"
    argv = ["loop-lag", "--turns", "500", "--recalls", "3", "--data", str(FIXTURES / "locomo"),
            "--out", str(out), "--no-progress"]  # fmt: skip

    assert run_bench(argv, lexical_config, "lexical") == 0

    data = json.loads((out / "results.json").read_text())
    assert data["bench"] == "loop-lag" and data["turns"] == 500
    assert data["recall_ms"]["n"] == 3
    assert data["list_tools_during_recall_ms"]["n"] >= 1
    assert data["list_tools_idle_ms"]["p50"] > 0
    assert "list_tools while another client recalls" in (out / "summary.md").read_text()
