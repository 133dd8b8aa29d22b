"""training/: a cross-encoder trained on mined rankings, exported as the ONNX ranker folder the
server loads (a tiny random BERT, a few steps: the pipeline runs end to end, offline)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from tiny_models import TinyModels

pytest.importorskip("datasets")
pytest.importorskip("accelerate")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from smartsearch_mcp.models import CrossEncoderScorer, ModelLocation
from smartsearch_mcp.models.onnx_ranker import OnnxRanker, export_onnx_ranker
from training.evaluate import evaluate, load_scorer
from training.pairs import read_sets
from training.train_cross_encoder import main

TEXTS = ["the capital of france is paris", "a cat sat on the mat", "paris is in france"]


def write_mined(folder: Path) -> Path:
    folder.mkdir(parents=True)
    lines = []
    for index, half in enumerate("ABAB"):
        passages = [
            {"rank": rank, "turn": rank, "span": [0, len(text)], "text": text, "gold": rank == 0}
            for rank, text in enumerate(TEXTS)
        ]
        record = {
            "id": f"c{index}:q",
            "haystack": f"c{index}",
            "half": half,
            "question": "what is the capital of france",
            "gold": [0],
            "passages": passages,
        }
        lines.append(json.dumps(record))
    (folder / "ranking.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_a_fold_is_trained_exported_and_ranked_by_the_onnx_ranker(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    mined = write_mined(tmp_path / "mined" / "sample")
    out = tmp_path / "run"

    main(["--mined", str(mined), "--fold", "A", "--out", str(out), "--base",
          str(tiny_models.bert), "--batch-size", "2", "--no-bf16", "--threads", "1",
          "--max-length", "32"])  # fmt: skip

    recipe = json.loads((out / "model" / "training.json").read_text())
    assert (recipe["fold"], recipe["pairs"], recipe["positives"]) == ("A", 6, 2)
    assert recipe["per_set"] == {"sample": {"questions": 2, "positives": 2, "negatives": 4}}
    folder = export_onnx_ranker(out / "model", tmp_path / "ranker", precision="fp32")
    ranker = OnnxRanker.load(folder)
    location = ModelLocation(str(out / "model"), str(out / "model"), "directory")
    torch_scorer = CrossEncoderScorer.load(location, precision="fp32")
    question = "what is the capital of france"
    assert ranker.score(question, TEXTS) == pytest.approx(
        torch_scorer.score(question, TEXTS), abs=1e-4
    )
    assert len(load_scorer(str(out / "model"))(question, TEXTS)) == 3  # bf16, for evaluate
    results = evaluate(read_sets([mined]), ranker.score, "B")
    assert results["sample"]["recall"]["first"] == 1.0  # recall put gold first in every one
    assert results["sample"]["model"]["n"] == 2


def test_the_listwise_loss_trains_on_each_question_s_passages_together(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    mined = write_mined(tmp_path / "mined" / "sample")
    out = tmp_path / "run"

    main(["--mined", str(mined), "--fold", "all", "--out", str(out), "--base",
          str(tiny_models.bert), "--loss", "lambda", "--batch-size", "6", "--negatives", "2",
          "--no-bf16", "--threads", "1", "--max-length", "32"])  # fmt: skip

    recipe = json.loads((out / "model" / "training.json").read_text())
    assert (recipe["loss"], recipe["pairs"]) == ("lambda", 12)


def test_the_ranking_loss_trains_on_gold_hard_and_in_batch_negatives_with_self_rows(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    mined = write_mined(tmp_path / "mined" / "sample")
    fixtures = Path(__file__).parents[1] / "fixtures"
    out = tmp_path / "run"

    main(["--mined", str(mined), "--fold", "A", "--out", str(out), "--base",
          str(tiny_models.bert), "--loss", "mnrl", "--negatives", "2", "--in-batch", "1",
          "--batch-size", "2", "--no-bf16", "--threads", "1", "--max-length", "32",
          "--self-supervised", "locomo", "--self-rows", "3", "--data", str(fixtures)])  # fmt: skip

    recipe = json.loads((out / "model" / "training.json").read_text())
    assert (recipe["loss"].split()[0], recipe["rows"]) == ("MultipleNegativesRankingLoss", 2 + 3)
    assert recipe["per_set"]["locomo (self-supervised)"] == {"rows": 3}
    assert (recipe["negatives_per_row"], recipe["in_batch_negatives"]) == (2, 1)
    scores = load_scorer(str(out / "model"))("what is the capital of france", TEXTS)
    assert len(scores) == 3 and all(math.isfinite(s) for s in scores)


def test_options_of_the_ranking_loss_are_refused_with_the_others() -> None:
    import training.train_cross_encoder as ce

    base = ["--mined", "m", "--out", "o"]
    assert ce.parse_args(base).negatives == 15
    assert ce.parse_args([*base, "--loss", "mnrl"]).negatives == 3
    for extra in (["--self-supervised", "locomo"], ["--in-batch", "5"]):
        with pytest.raises(SystemExit):
            ce.parse_args([*base, *extra])


def test_a_packaged_splade_body_is_found_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import training.train_cross_encoder as ce
    from smartsearch_mcp.models import splade

    found = splade.ModelLocation("splade-tiny", "/somewhere/cognition/model", "package")
    monkeypatch.setattr(splade, "resolve_splade", lambda name: found)
    assert ce.base_path("splade-tiny") == "/somewhere/cognition/model"
    assert ce.base_path("some/folder") == "some/folder"


def test_the_bi_encoder_is_fine_tuned_on_questions_with_their_hard_negatives(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    from training.pairs import build_pairs
    from training.train_bi_encoder import main as train_bi_encoder
    from training.train_bi_encoder import triplet_rows

    mined = write_mined(tmp_path / "mined" / "sample")
    rows = triplet_rows(build_pairs(read_sets([mined])), negatives=2)
    assert len(rows) == 4
    assert rows[0]["passage"] == TEXTS[0]
    assert {rows[0]["negative_1"], rows[0]["negative_2"]} == set(TEXTS[1:])
    assert triplet_rows(build_pairs(read_sets([mined])), negatives=3) == []  # too few

    out = tmp_path / "bi"
    train_bi_encoder(["--mined", str(mined), "--fold", "A", "--out", str(out), "--base",
                      str(tiny_models.sentence_transformer), "--negatives", "2",
                      "--batch-size", "2", "--no-bf16", "--threads", "1"])  # fmt: skip

    recipe = json.loads((out / "model" / "training.json").read_text())
    assert (recipe["fold"], recipe["rows"]) == ("A", 2)
    scores = load_scorer(str(out / "model"))("what is the capital of france", TEXTS)
    assert len(scores) == 3 and all(-1.0 <= s <= 1.0 for s in scores)


def test_a_colbert_is_trained_with_a_new_projection_and_scored_by_the_server_s_colbert(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    from smartsearch_mcp.models import ColbertScorer
    from training.train_colbert import main as train_colbert

    mined = write_mined(tmp_path / "mined" / "sample")
    out = tmp_path / "colbert"
    train_colbert(["--mined", str(mined), "--fold", "A", "--out", str(out), "--base",
                   str(tiny_models.sentence_transformer), "--negatives", "2",
                   "--batch-size", "2", "--no-bf16", "--threads", "1",
                   "--served-length", "64"])  # fmt: skip

    folder = out / "model"
    recipe = json.loads((folder / "training.json").read_text())
    assert (recipe["fold"], recipe["rows"], recipe["projection_dim"]) == ("A", 2, 128)
    assert recipe["served_document_length"] == 64
    location = ModelLocation(str(folder), str(folder), "directory")
    colbert = ColbertScorer.load(location, precision="fp32")
    assert colbert.backend == "sentence_transformers"  # loaded natively, without pylate
    question = "what is the capital of france"
    scores = colbert.score(question, TEXTS)
    assert len(scores) == 3 and all(math.isfinite(s) for s in scores)
    assert load_scorer(str(folder))(question, TEXTS) == pytest.approx(scores, rel=0.05)  # bf16


def test_an_untrained_colbert_is_saved_with_the_projection_a_trained_run_starts_from(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    from training.train_colbert import main as train_colbert

    mined = write_mined(tmp_path / "mined" / "sample")
    folders = []
    for name in ("one", "two"):
        train_colbert(["--mined", str(mined), "--out", str(tmp_path / name), "--base",
                       str(tiny_models.sentence_transformer), "--negatives", "2",
                       "--max-steps", "0"])  # fmt: skip
        folders.append(tmp_path / name / "model")

    assert json.loads((folders[0] / "training.json").read_text())["train_seconds"] == 0
    one, two = (load_scorer(str(folder)) for folder in folders)
    assert one("paris", TEXTS) == two("paris", TEXTS)


def test_self_supervised_rows_of_the_fold_s_conversations_join_the_mined_ones(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    from training.train_colbert import main as train_colbert

    mined = write_mined(tmp_path / "mined" / "sample")
    fixtures = Path(__file__).parents[1] / "fixtures"
    runs = {}
    for fold in ("A", "B"):  # the LoCoMo slice's one conversation is in half A
        out = tmp_path / fold
        train_colbert(["--mined", str(mined), "--fold", fold, "--out", str(out), "--base",
                       str(tiny_models.sentence_transformer), "--negatives", "2",
                       "--batch-size", "2", "--no-bf16", "--threads", "1", "--max-steps", "1",
                       "--self-supervised", "locomo", "--self-rows", "3",
                       "--data", str(fixtures)])  # fmt: skip
        runs[fold] = json.loads((out / "model" / "training.json").read_text())

    assert runs["A"]["per_set"]["locomo (self-supervised)"] == {"rows": 3}
    assert runs["A"]["rows"] == 2 + 3
    assert runs["A"]["self_supervised_sets"] == ["locomo"]
    assert "locomo (self-supervised)" not in runs["B"]["per_set"]
    assert runs["B"]["rows"] == 2


def test_bf16_autocast_is_on_only_where_the_cpu_computes_bf16(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import training.train_cross_encoder as ce

    base = ["--mined", "m", "--out", "o"]
    for native in (True, False):
        monkeypatch.setattr(ce, "native_bf16", lambda native=native: native)
        assert ce.parse_args(base).bf16 is native
        assert ce.parse_args([*base, "--bf16"]).bf16 is True
        assert ce.parse_args([*base, "--no-bf16"]).bf16 is False


def test_a_run_resumed_from_its_checkpoint_ends_with_the_model_of_a_run_never_stopped(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    import shutil

    from training.train_colbert import main as train_colbert

    mined = write_mined(tmp_path / "mined" / "sample")
    fixtures = Path(__file__).parents[1] / "fixtures"

    def run(out: Path, *extra: str) -> None:
        train_colbert(["--mined", str(mined), "--out", str(out), "--base",
                       str(tiny_models.sentence_transformer), "--negatives", "2",
                       "--batch-size", "2", "--no-bf16", "--threads", "1", "--max-steps", "3",
                       "--save-steps", "1", "--self-supervised", "locomo", "--self-rows", "3",
                       "--data", str(fixtures), *extra])  # fmt: skip

    whole = tmp_path / "whole"
    run(whole)
    kept = sorted(p.name for p in (whole / "checkpoints").iterdir())
    assert kept == ["checkpoint-2", "checkpoint-3"]  # the last two
    stopped = tmp_path / "stopped"  # as if stopped right after step 2 was saved
    shutil.copytree(
        whole / "checkpoints" / "checkpoint-2", stopped / "checkpoints" / "checkpoint-2"
    )
    run(stopped, "--resume")

    recipe = json.loads((stopped / "model" / "training.json").read_text())
    assert recipe["resumed_from_checkpoint"] is True
    question = "what is the capital of france"
    resumed, never_stopped = (
        load_scorer(str(o / "model"))(question, TEXTS) for o in (stopped, whole)
    )
    assert resumed == pytest.approx(never_stopped, abs=1e-5)
    untrained = tmp_path / "untrained"
    run(untrained, "--max-steps", "0")
    assert load_scorer(str(untrained / "model"))(question, TEXTS) != pytest.approx(
        never_stopped, abs=1e-5
    )  # the three steps changed the model, so the comparison above can fail


def test_resume_without_a_checkpoint_stops_with_a_clear_message(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    from training.train_colbert import main as train_colbert

    mined = write_mined(tmp_path / "mined" / "sample")
    with pytest.raises(SystemExit, match="no checkpoint in"):
        train_colbert(["--mined", str(mined), "--out", str(tmp_path / "new"), "--base",
                       str(tiny_models.sentence_transformer), "--negatives", "2",
                       "--resume"])  # fmt: skip
    assert not (tmp_path / "new" / "model").exists()
