"""`bench rankers`: random-weight models of the configured shapes, timed both ways (with small
shapes here, so that the test is quick; the real shapes are the same code)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from smartsearch_mcp.bench import rankers
from smartsearch_mcp.bench.cli import run_bench
from smartsearch_mcp.config import Config, ModelsConfig
from smartsearch_mcp.types import InputError

FIXTURES = Path(__file__).parents[1] / "fixtures"
SMALL_CROSS = "test/small-cross-encoder"
SMALL_COLBERT = "test/small-colbert"


@pytest.fixture
def small_shapes(monkeypatch: pytest.MonkeyPatch) -> Config:
    shapes = {
        SMALL_CROSS: rankers.Shape(2, 32, 2, 64, max_length=128),
        SMALL_COLBERT: rankers.Shape(2, 32, 2, 64, max_length=128, colbert_dim=16),
    }
    monkeypatch.setattr(rankers, "KNOWN_SHAPES", {**rankers.KNOWN_SHAPES, **shapes})
    config = Config.load("default")
    models = dataclasses.replace(
        config.models, cross_encoder=SMALL_CROSS, colbert=SMALL_COLBERT, precision="fp32"
    )
    return dataclasses.replace(config, models=models)


def test_the_json_summary_times_both_ways_with_the_configured_shapes(
    small_shapes: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["rankers", "--json", "--candidates", "6", "--repeats", "3", "--questions", "3"]
    argv += ["--data", str(FIXTURES)]
    cascade = small_shapes.with_overrides(rank={"expensive_candidates": 2})

    assert run_bench(argv, cascade, "test") == 0

    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for key in ("rank_p50_ms", "rank_p95_ms", "naive_p50_ms", "naive_p95_ms"):
        assert summary[key] > 0
    assert summary["rank_p50_ms"] <= summary["rank_p95_ms"]
    assert summary["candidates"] == 6 and summary["queries"] == 3
    assert summary["texts"] == "LoCoMo turns"
    assert summary["precision"] == "fp32" and summary["naive_precision"] == "fp32"
    assert summary["models"]["cross_encoder"]["layers"] == 2
    assert summary["models"]["colbert"]["colbert_dim"] == 16
    assert summary["threads"]["per_ranker"] >= 1
    # fp16 token vectors: 2 bytes x 16 dimensions x at least one token per passage
    assert summary["colbert_bytes_per_passage"] >= 32
    assert summary["colbert_index_passages_per_s"] > 0
    layouts = summary["thread_layouts"]
    assert {"recall", "parallel_split", "sequential_all_cores"} <= set(layouts)
    if "recall_onnx_int8" in layouts:  # onnxruntime installed: compared, same pairs
        assert summary["onnx_cross_encoder"]["precision"] == "int8"
        assert -1 <= summary["onnx_cross_encoder"]["mean_spearman"] <= 1
    assert layouts["recall"]["rank_p50_ms"] == summary["rank_p50_ms"]
    assert not layouts["sequential_all_cores"]["parallel"]
    # the whole recall over the LoCoMo fixture, with the ColBERT indexed in the background
    whole = summary["whole_recall"]
    assert whole["questions"] == 3 and whole["turns"] > 0
    assert whole["colbert_indexed_passages"] >= whole["turns"]
    assert {"cross_encoder", "colbert"} <= set(whole["recall_rankers"])
    assert summary["recall_p50_ms"] == whole["recall_p50_ms"] > 0
    # ...with the cascade as configured, then without it, on the same questions
    assert whole["expensive_candidates"] == summary["recall_expensive_candidates"] == 2
    without = whole["without_cascade"]
    assert without["questions"] == 3 and without["recall_p50_ms"] > 0
    assert summary["recall_without_cascade_p50_ms"] == without["recall_p50_ms"]
    assert 0 < whole["recall_rank_stage_p50_ms"] <= whole["recall_rank_stage_p95_ms"]
    # each stage of recall, as recall times it
    assert {"analyze", "retrieve", "rank", "rank.cross_encoder"} <= set(whole["stage_p50_ms"])
    assert summary["cross_encoder_runtime"] == {"backend": "torch", "precision": "fp32"}
    # each passage stores an 8-byte header and at least one 16-dim float16 token
    assert summary["colbert_bytes_per_turn"] >= 8 + 32
    assert summary["db_growth_per_turn_bytes"] > 0
    assert summary["load_average"]["before"]


def test_with_the_cross_encoder_on_onnx_runtime_torch_is_the_compared_row(
    small_shapes: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    auto = small_shapes.with_overrides(models={"precision": "auto"})  # the default preset's
    argv = ["rankers", "--json", "--candidates", "6", "--repeats", "3", "--questions", "0"]

    assert run_bench([*argv, "--data", str(FIXTURES)], auto, "test") == 0

    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["cross_encoder_runtime"] == {"backend": "onnxruntime", "precision": "int8"}
    torch_rows = [name for name in summary["thread_layouts"] if name.startswith("recall_torch")]
    assert len(torch_rows) == 1 and "recall_onnx_int8" not in summary["thread_layouts"]
    agreement = summary["onnx_cross_encoder"]
    assert agreement["backend"] == "onnxruntime" and agreement["precision"] == "int8"
    assert agreement["reference_precision"] in ("bf16", "fp32")
    assert -1 <= agreement["mean_spearman"] <= 1


def test_the_shapes_of_the_default_preset_are_known() -> None:
    config = Config.load("default")

    cross = rankers.shape_of(config.models.cross_encoder, "cross_encoder")
    colbert = rankers.shape_of(config.models.colbert, "colbert")

    assert (cross.layers, cross.hidden, cross.heads, cross.vocab) == (12, 384, 12, 30522)
    assert (colbert.layers, colbert.hidden, colbert.colbert_dim) == (12, 384, 96)


def test_an_unknown_shape_is_named_with_the_known_ones() -> None:
    config = Config.load("default")
    models = ModelsConfig(cross_encoder="someone/unknown-reranker")

    with pytest.raises(InputError, match=r"someone/unknown-reranker.*known: .*MiniLM-L-12"):
        rankers.run(dataclasses.replace(config, models=models), repeats=1)


def test_candidates_are_generated_when_no_data_is_there(tmp_path: Path) -> None:
    pairs, source = rankers.candidate_texts(tmp_path / "missing", count=5, queries=2)

    assert source == "generated"
    assert len(pairs) == 2 and all(len(texts) == 5 for _, texts in pairs)
    assert all(question.endswith("?") for question, _ in pairs)
