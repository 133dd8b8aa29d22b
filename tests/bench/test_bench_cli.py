"""`smartsearch-mcp bench` end to end through the real `Memory` (lexical ranking only, no
model), on the fixture slices; plus argument errors and the main CLI's dispatch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from smartsearch_mcp.bench.cli import build_parser, command_line, run_bench
from smartsearch_mcp.cli import main
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError

FIXTURES = Path(__file__).parents[1] / "fixtures"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def run(argv: list[str], config: Config, out: Path) -> dict[str, Any]:
    assert run_bench([*argv, "--out", str(out), "--no-progress"], config, "lexical") == 0
    return json.loads((out / "results.json").read_text())


def assert_recall_in_unit_interval(data: dict[str, Any]) -> None:
    for system in data["summary"]["recall"].values():
        for by_category in system.values():
            for value in by_category.values():
                assert value is None or 0.0 <= value <= 1.0


def test_locomo_bench_end_to_end_writes_results_summary_and_plots(
    lexical_config: Config, tmp_path: Path
) -> None:
    out = tmp_path / "locomo"
    data = run(
        ["locomo", str(FIXTURES / "locomo"), "--baseline", "bm25", "--baseline", "full-context"],
        lexical_config,
        out,
    )

    for plot in ("recall_vs_budget.png", "latency.png"):
        assert (out / plot).read_bytes()[:8] == PNG_MAGIC
    assert "| 1,500 | BM25 (FTS5) |" in (out / "summary.md").read_text()
    assert data["budgets"] == [750, 1500, 3000, 6000]
    ours = {"smartsearch", "smartsearch-fixed"} | {
        f"smartsearch@alpha={a}" for a in ("0.1", "0.2", "0.3", "0.5")
    }
    assert set(data["summary"]["recall"]) == {*ours, "bm25", "full-context"}
    assert_recall_in_unit_interval(data)
    assert len(data["questions"]) == 5
    first = data["questions"][0]
    assert first["systems"]["smartsearch"]["1500"]["recall"] == 1.0  # 8 turns fit any budget
    assert first["systems"]["smartsearch"]["750"]["tokens"] <= 750
    assert first["latency_ms"]["end_to_end"] > 0
    assert {"analyze", "retrieve", "expand", "rank"} <= set(first["latency_ms"])
    assert data["haystacks"][0]["turns"] == 8


def test_locomo_bench_recall_on_a_hand_labelled_conversation_is_the_hand_computed_one(
    lexical_config: Config, tmp_path: Path
) -> None:
    """tests/fixtures/handlabelled (its README gives the reasoning): a lexical-only recall
    without feedback terms or hops finds exactly the gold turns that share a content word
    with their question — 1, 1/2, 1/2 and 0 of them, 0.5 on average, at every budget — while
    the whole conversation (full context) holds all of them."""
    config = lexical_config.with_overrides(retrieval={"prf_docs": 0}, expansion={"enabled": False})
    data = run(
        ["locomo", str(FIXTURES / "handlabelled"), "--baseline", "full-context", "--no-plots"],
        config,
        tmp_path / "hand",
    )

    by_question = {
        q["question"]: {b: v["recall"] for b, v in q["systems"]["smartsearch"].items()}
        for q in data["questions"]
    }
    expected = {
        "Where was the accordion bought?": 1.0,
        "At which celebration was the accordion heard in public?": 0.5,
        "What flooring goes into the basement?": 0.5,
        "Who receives the ceramics as presents?": 0.0,
    }
    assert by_question == {q: dict.fromkeys(by_question[q], r) for q, r in expected.items()}
    recall = data["summary"]["recall"]
    assert {budget: r["overall"] for budget, r in recall["smartsearch"].items()} == dict.fromkeys(
        ("750", "1500", "3000", "6000"), 0.5
    )
    assert {r["overall"] for r in recall["full-context"].values()} == {1.0}


def test_beam_bench_end_to_end_excludes_abstention_from_recall(
    lexical_config: Config, tmp_path: Path
) -> None:
    out = tmp_path / "beam"
    data = run(["beam", str(FIXTURES / "beam"), "--baseline", "bm25", "--no-plots"],
               lexical_config, out)  # fmt: skip

    summary = data["summary"]
    assert summary["excluded_no_gold"]["abstention"] == 1
    assert summary["recall"]["smartsearch"]["750"]["abstention"] is None
    assert_recall_in_unit_interval(data)
    markdown = (out / "summary.md").read_text()
    assert "abstention: 1)" in markdown
    assert "abstention (n=0)" not in markdown


def test_longmemeval_bench_end_to_end_on_the_fixture_slice(
    lexical_config: Config, tmp_path: Path
) -> None:
    data = run(
        ["longmemeval", str(FIXTURES / "longmemeval" / "longmemeval_s_slice.json"), "--no-plots"],
        lexical_config,
        tmp_path / "lme",
    )

    (question,) = data["questions"]
    assert question["reference"] == "2023-05-30T23:40:00"
    assert question["gold"]
    assert_recall_in_unit_interval(data)


@pytest.mark.slow
def test_longmemeval_bench_on_the_real_sample_record_with_its_whole_haystack(
    lexical_config: Config, tmp_path: Path, shared_data: Any
) -> None:
    path = shared_data("longmemeval-sample/longmemeval_s_one_question.json")

    data = run(["longmemeval", str(path), "--no-plots"], lexical_config, tmp_path / "lme")

    assert data["haystacks"][0]["input_turns"] == 550
    # Two turns repeat verbatim in their session: said twice, both are kept (memory is
    # verbatim; only re-sends are skipped).
    assert data["haystacks"][0]["turns"] == 550
    (question,) = data["questions"]
    assert question["gold"]
    assert question["candidate_recall"] is not None


def test_scale_bench_builds_a_synthetic_memory_and_times_both_modes(
    lexical_config: Config, tmp_path: Path
) -> None:
    out = tmp_path / "scale"
    argv = ["scale", "--turns", "2000", "--data", str(FIXTURES / "locomo"), "--data",
            str(FIXTURES / "beam"), "--queries", "3", "--checkpoints", "1000"]  # fmt: skip

    data = run(argv, lexical_config, out)

    assert [p["turns"] for p in data["checkpoints"]] == [1000, 2000]
    assert data["stored"] + data["duplicates_skipped"] == 2000
    for point in data["checkpoints"]:
        assert set(point["recall"]) == {"indexed", "grep"}
        assert point["recall"]["indexed"]["p50"] > 0
        assert point["recall"]["grep"]["after_write"]["p50"] > 0
        assert "scan.count" not in point["recall"]["grep"]["stages_p50"]  # cached, not streamed
        assert point["db_bytes"] > 0
        assert point["peak_rss_mb"] > 0
    assert data["remember_turns_per_s"] > 0
    assert any("bulk remember" in t for t in data["targets"])
    assert "| 2,000 |" in (out / "summary.md").read_text()
    assert (out / "scale.png").read_bytes()[:8] == PNG_MAGIC


def test_scale_bench_needs_real_data_to_recombine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SMARTSEARCH_BENCH_DATA", raising=False)
    with pytest.raises(InputError, match="--data"):
        run_bench(["scale", "--turns", "10", "--out", str(tmp_path)], Config(), None)


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or folder"):
        run_bench(["locomo", str(tmp_path / "nowhere")], Config(), None)


def test_an_invalid_path_names_what_was_expected(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"turns": []}')
    with pytest.raises(InputError, match="LoCoMo"):
        run_bench(["locomo", str(tmp_path / "x.json")], Config(), None)


def test_bad_budgets_and_categories_are_rejected(tmp_path: Path) -> None:
    locomo = str(FIXTURES / "locomo")
    with pytest.raises(InputError, match="budgets"):
        run_bench(["locomo", locomo, "--budgets", "100,abc"], Config(), None)
    with pytest.raises(InputError, match="categories"):
        run_bench(["locomo", locomo, "--categories", "7"], Config(), None)
    with pytest.raises(InputError, match="--cascade-cuts: '0' is not a positive"):
        run_bench(["locomo", locomo, "--cascade-cuts", "30,0"], Config(), None)
    with pytest.raises(SystemExit):
        run_bench(["locomo", locomo, "--baseline", "oracle"], Config(), None)


def test_without_a_bench_name_help_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_bench([], Config(), None) == 2
    assert "locomo" in capsys.readouterr().err


def test_the_parser_documents_every_bench() -> None:
    text = build_parser().format_help()
    benches = ("locomo", "beam", "longmemeval", "realmem", "memgallery", "qmsum", "friendsqa")
    for name in (*benches, "scale", "report"):
        assert name in text


def test_main_cli_dispatches_bench_and_honours_config_after_the_bench_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "lexical.toml"
    config.write_text(
        '[nlp]\nspacy_models = []\n[retrieval]\ndense = false\n[rank]\nscorers = ["lexical"]\n'
        '[truncation]\ntokenizer = "estimate"\n'
    )
    out = tmp_path / "out"

    argv = ["bench", "locomo", str(FIXTURES / "locomo"), "--config", str(config)]
    argv += ["--limit", "2", "--out", str(out), "--no-progress", "--no-plots"]

    code = main(argv)

    assert code == 0
    data = json.loads((out / "results.json").read_text())
    assert data["config_name"] == "lexical"
    assert data["config"]["rank"]["scorers"] == ["lexical"]
    assert len(data["questions"]) == 2
    assert "Gold-evidence recall" in capsys.readouterr().out


def test_main_cli_reports_a_missing_path_as_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "beam", str(tmp_path / "nowhere")]) == 1
    assert "no such file or folder" in capsys.readouterr().err


def test_the_recorded_command_names_the_config_however_it_was_given() -> None:
    assert command_line(["locomo", "data"], "offline") == (
        "smartsearch-mcp bench locomo --config offline data"
    )
    assert command_line(["beam", "d", "--config", "x.toml"], "x.toml") == (
        "smartsearch-mcp bench beam d --config x.toml"
    )
    assert (
        command_line(["scale", "--turns", "10"], None) == "smartsearch-mcp bench scale --turns 10"
    )


def test_cold_recall_bench_times_fresh_cli_processes_that_answer(
    lexical_config: Config, tmp_path: Path
) -> None:
    out = tmp_path / "cold"
    assert (
        run_bench(["cold-recall", "--runs", "2", "--out", str(out)], lexical_config, "lexical") == 0
    )

    data = json.loads((out / "results.json").read_text())
    summary = data["summary"]
    assert summary["answered"] is True and summary["turns"] > 0
    assert len(summary["runs"]) == 2
    assert all(run["wall_s"] > 0 and run["cpu_s"] > 0 for run in summary["runs"])
    assert summary["later_wall_p50_s"] == summary["runs"][1]["wall_s"]
    assert "| first (may export the bi-encoder) |" in (out / "summary.md").read_text()


@pytest.fixture(scope="module")
def lexical_preset() -> Config:
    """The shipped `lexical` preset: recall without any learned model."""
    return Config.load("lexical")


def halves_table(markdown: str) -> str:
    return markdown.split("By half", 1)[1].split("\n###", 1)[0]


def test_realmem_bench_asks_each_query_where_it_occurs_and_reports_both_halves(
    lexical_preset: Config, tmp_path: Path
) -> None:
    out = tmp_path / "realmem"
    data = run(
        ["realmem", str(FIXTURES / "realmem"), "--baseline", "bm25", "--baseline",
         "full-context", "--budgets", "1500,6000", "--no-plots"],
        lexical_preset,
        out,
    )  # fmt: skip

    assert [q["id"] for q in data["questions"]] == [
        "Ana_Example:Q-0001",
        "Ana_Example:Q-0002",
        "Ana_Example:Q-0003",
        "Bo_Example:Q-0001",
    ]
    first, second, no_gold, bo = data["questions"]
    assert len(first["gold"]) == 2 and len(second["gold"]) == 2 and len(bo["gold"]) == 1
    # all gold is in the past: whatever memory held when the query came holds it
    assert {q["systems"]["full-context"]["all"]["recall"] for q in (first, second, bo)} == {1.0}
    assert first["full_context_tokens"] < second["full_context_tokens"]
    assert no_gold["gold"] == [] and len(no_gold["unresolved_evidence"]) == 1
    ana = data["haystacks"][0]
    assert (ana["half"], ana["input_turns"], ana["turns"]) == ("A", 13, 11)  # by Q-0003
    assert set(data["halves"]) == {"A", "B"}
    assert data["halves"]["B"]["with_gold"]["overall"] == 1
    assert data["data_counts"]["memory references to the query turn or later (dropped)"] == 1
    markdown = (out / "summary.md").read_text()
    table = halves_table(markdown)
    assert "| A (n=2): recall | A: found | B (n=1): recall | B: found |" in table
    assert "| 6,000 | BM25 (FTS5) |" in table
    assert "Half A: Ana_Example." in table
    assert "memory points unresolved: 1" in markdown
    assert_recall_in_unit_interval(data)


def test_memgallery_bench_excludes_abstention_and_alternates_conversations(
    lexical_preset: Config, tmp_path: Path
) -> None:
    out = tmp_path / "memgallery"
    data = run(["memgallery", str(FIXTURES / "memgallery"), "--no-plots"], lexical_preset, out)

    summary = data["summary"]
    assert summary["excluded_no_gold"]["AR"] == 1
    assert summary["with_gold"]["overall"] == 5
    assert summary["categories"][:2] == ["VS", "FR"]  # in Mem-Gallery's type order
    mr = next(q for q in data["questions"] if q["category"] == "MR")
    assert len(mr["gold"]) == 4  # two rounds: each the user turn and the reply
    assert mr["unresolved_evidence"] == ["D7:3"]
    assert {h["name"]: h["half"] for h in data["haystacks"]} == {
        "Birdwatching_City_Parks": "A",
        "Community_Garden_Plots": "B",
        "Pottery_Weekend_Studio": "A",
    }
    assert data["halves"]["A"]["with_gold"]["overall"] == 4
    assert "Half B: Community_Garden_Plots." in (out / "summary.md").read_text()


def test_qmsum_bench_halves_are_the_split_folders_and_found_is_reported(
    lexical_preset: Config, tmp_path: Path
) -> None:
    out = tmp_path / "qmsum"
    data = run(
        ["qmsum", str(FIXTURES / "qmsum"), "--baseline", "bm25", "--no-plots"],
        lexical_preset,
        out,
    )

    assert [(h["name"], h["half"], h["turns"]) for h in data["haystacks"]] == [
        ("TS1001a", "train", 7),
        ("Bro001", "val", 5),
        ("education_4", "val", 3),
    ]
    assert list(data["halves"]) == ["train", "val"]
    assert data["summary"]["categories"] == ["product", "academic", "committee"]
    found = data["summary"]["found_any"]["smartsearch"]["6000"]["overall"]
    assert found is not None and 0.0 < found <= 1.0
    table = halves_table((out / "summary.md").read_text())
    assert "train (n=2): recall" in table and "val (n=2): recall" in table


def test_friendsqa_bench_scores_each_scene_with_every_gold_utterance(
    lexical_preset: Config, tmp_path: Path
) -> None:
    out = tmp_path / "friendsqa"
    data = run(
        ["friendsqa", str(FIXTURES / "friendsqa" / "friendsqa_fixture.json"), "--baseline",
         "full-context", "--budgets", "6000"],
        lexical_preset,
        out,
    )  # fmt: skip

    assert len(data["questions"]) == 5
    pink = data["questions"][0]
    assert (pink["category"], len(pink["gold"])) == ("what", 2)
    assert pink["systems"]["full-context"]["all"]["recall"] == 1.0
    assert {h["half"] for h in data["haystacks"]} == {"A", "B"}
    assert (out / "recall_vs_budget.png").read_bytes()[:8] == PNG_MAGIC


def test_ablate_ranks_every_question_again_with_each_adjustment_off(
    lexical_config: Config, tmp_path: Path
) -> None:
    config = lexical_config.with_overrides(rank={"adjust": ["session_support", "time_range"]})
    argv = ["locomo", str(FIXTURES / "locomo"), "--budgets", "750,1500", "--alphas", ""]
    data = run([*argv, "--ablate"], config, tmp_path / "ablate")
    alone = run(
        argv,
        config.with_overrides(rank={"adjust": ["time_range"]}),
        tmp_path / "without-session",
    )

    for ablated, plain in zip(data["questions"], alone["questions"], strict=True):
        systems = ablated["systems"]
        assert set(systems["smartsearch-without=time_range"]) == {"1500"}  # the main budget
        without = systems["smartsearch-without=session_support"]["1500"]
        assert without["returned"] == plain["systems"]["smartsearch"]["1500"]["returned"]
    summary = (tmp_path / "ablate" / "summary.md").read_text()
    assert "Each adjustment off (recall at 1,500 tokens)" in summary
    assert "| without session_support |" in summary and "| as configured |" in summary
    assert "Each adjustment off" not in (tmp_path / "without-session" / "summary.md").read_text()


def test_half_evaluates_only_that_half_and_an_unknown_half_names_those_there_are(
    lexical_preset: Config, tmp_path: Path
) -> None:
    memgallery = str(FIXTURES / "memgallery")
    data = run(["memgallery", memgallery, "--half", "B", "--no-plots"], lexical_preset, tmp_path)

    assert {h["name"]: h["half"] for h in data["haystacks"]} == {"Community_Garden_Plots": "B"}
    assert {q["half"] for q in data["questions"]} == {"B"}
    with pytest.raises(InputError, match=r"--half C: memgallery has no such half \(halves: A, B\)"):
        run_bench(["memgallery", memgallery, "--half", "C", "--out", str(tmp_path / "c")],
                  lexical_preset, "lexical")  # fmt: skip


def test_beam_conversations_alternate_between_halves(
    lexical_preset: Config, tmp_path: Path
) -> None:
    split = tmp_path / "beam"
    for name in ("1", "2", "3"):
        shutil.copytree(FIXTURES / "beam" / "1", split / name)
    data = run(["beam", str(split), "--no-plots"], lexical_preset, tmp_path / "b")

    assert {h["name"]: h["half"] for h in data["haystacks"]} == {
        "beam-1": "A",
        "beam-2": "B",
        "beam-3": "A",
    }
    assert data["split"].startswith("halves alternate in conversation id order")
    assert set(data["halves"]) == {"A", "B"}


def test_keep_ranking_writes_the_best_passages_and_every_gold_passage_with_their_texts(
    lexical_preset: Config, tmp_path: Path
) -> None:
    out = tmp_path / "kept"
    data = run(
        ["memgallery", str(FIXTURES / "memgallery"), "--keep-ranking", "2", "--no-plots"],
        lexical_preset,
        out,
    )
    records = [json.loads(line) for line in (out / "ranking.jsonl").read_text().splitlines()]

    assert [r["id"] for r in records] == [q["id"] for q in data["questions"]]
    by_id = {q["id"]: q for q in data["questions"]}
    for record in records:
        question = by_id[record["id"]]
        ranked = [p for p in record["passages"] if p["rank"] is not None]
        assert [p["rank"] for p in ranked] == sorted(p["rank"] for p in ranked)
        # the best two, then only gold further down
        assert all(p["gold"] for p in ranked if p["rank"] >= 2)
        assert {p["turn"] for p in record["passages"] if p["gold"]} == set(question["gold"])
        assert all(p["gold"] == (p["turn"] in question["gold"]) for p in record["passages"])
        turns = question["gold_turns"]
        for passage in record["passages"]:
            if str(passage["turn"]) in turns:  # the text the rankers read: "speaker: text"
                brief = turns[str(passage["turn"])]
                assert passage["text"].startswith(f"{brief['speaker']}: ")
