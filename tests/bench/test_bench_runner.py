"""The harness on its own, with a deterministic fake pipeline (BM25 rank, word truncation):
remembering, gold mapping, recall at budgets, baselines, latency fields, limits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from smartsearch_mcp.bench.datasets import (
    Benchmark,
    BenchQuestion,
    Haystack,
    load_locomo_bench,
    load_longmemeval_bench,
)
from smartsearch_mcp.bench.runner import (
    WARM_UP_QUERY,
    RunOptions,
    primary_budget,
    run_benchmark,
)
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import SessionInput, TurnInput

pytestmark = pytest.mark.anyio

FIXTURES = Path(__file__).parents[1] / "fixtures"


async def run_locomo(pool: Any, **options: Any) -> Any:
    config = Config().with_overrides(truncation={"tokenizer": "estimate"})
    benchmark = load_locomo_bench(FIXTURES / "locomo")
    settings = {"budgets": (20, 1000), "baselines": ("bm25", "full-context"), "progress": False}
    settings.update(options)
    return await run_benchmark(benchmark, config, RunOptions(**settings), pool=pool)


async def test_each_question_is_ranked_once_and_truncated_at_every_budget(fake_pool: Any) -> None:
    output = await run_locomo(fake_pool)

    (memory,) = fake_pool.opened
    warm_up, *calls = memory.pipeline.calls  # an untimed first recall loads the models
    assert warm_up[0] == WARM_UP_QUERY
    assert len(calls) == 5
    assert fake_pool.closed
    first = output.outcomes[0]
    assert first["id"] == "26:q0"
    assert first["category"] == "temporal"
    assert set(first["systems"]["smartsearch"]) == {"20", "1000"}
    assert first["reference"] == "2023-05-25T13:14:00"


async def test_the_same_ranking_is_also_cut_with_the_budget_filled_and_at_each_threshold(
    fake_pool: Any,
) -> None:
    output = await run_locomo(fake_pool, alphas=(0.5, 0.95))

    assert len(fake_pool.opened[0].pipeline.calls) == 6  # still ranked once per question
    for outcome in output.outcomes:
        systems = outcome["systems"]
        assert set(systems["smartsearch-fixed"]) == {"20", "1000"}
        assert set(systems["smartsearch@alpha=0.5"]) == set(systems["smartsearch@alpha=0.95"])
        assert set(systems["smartsearch@alpha=0.95"]) == {"1000"}  # the default budget's
        tight, loose = systems["smartsearch@alpha=0.95"]["1000"], systems["smartsearch@alpha=0.5"]
        assert tight["passages"] <= loose["1000"]["passages"]
        assert loose["1000"]["passages"] <= systems["smartsearch-fixed"]["1000"]["passages"]


async def test_gold_dia_ids_map_to_the_remembered_turns(fake_pool: Any) -> None:
    output = await run_locomo(fake_pool)

    first = output.outcomes[0]
    (gold_id,) = first["gold"]
    assert first["gold_turns"][str(gold_id)]["text"].startswith("I joined a pottery class")
    hand_made = output.outcomes[4]
    assert len(hand_made["gold"]) == 5
    assert hand_made["unresolved_evidence"] == ["see", "D30:5"]


async def test_recall_candidates_and_baselines_are_within_bounds(fake_pool: Any) -> None:
    output = await run_locomo(fake_pool)

    for outcome in output.outcomes:
        for system, budgets in outcome["systems"].items():
            for result in budgets.values():
                if outcome["gold"]:
                    assert 0.0 <= result["recall"] <= 1.0, system
                else:
                    assert result["recall"] is None
        assert set(outcome["candidate_found"]) <= set(outcome["gold"])
    first = output.outcomes[0]
    assert first["systems"]["smartsearch"]["1000"]["recall"] == 1.0
    assert first["systems"]["bm25"]["1000"]["recall"] == 1.0
    assert first["systems"]["full-context"]["all"]["recall"] == 1.0
    assert first["systems"]["bm25"]["20"]["tokens"] <= 20
    assert first["systems"]["full-context"]["all"]["tokens"] == first["full_context_tokens"]


async def test_a_question_without_resolvable_gold_is_kept_but_scores_no_recall(
    fake_pool: Any,
) -> None:
    output = await run_locomo(fake_pool)

    no_gold = output.outcomes[3]  # "What did Melanie plant recently?": D8:6, D9:17 missing
    assert no_gold["gold"] == []
    assert no_gold["candidate_recall"] is None
    assert no_gold["systems"]["smartsearch"]["1000"]["recall"] is None


async def test_latency_has_the_pipeline_stages_truncate_end_to_end_and_bm25(
    fake_pool: Any,
) -> None:
    output = await run_locomo(fake_pool)

    latency = output.outcomes[0]["latency_ms"]
    assert {"analyze", "retrieve", "expand", "rank", "truncate", "end_to_end", "bm25"} <= set(
        latency
    )
    assert latency["end_to_end"] >= latency["truncate"] >= 0
    assert output.rankers == {"fake": 5}
    assert output.haystacks[0]["turns"] == 8


async def test_limit_stops_after_n_questions(fake_pool: Any) -> None:
    output = await run_locomo(fake_pool, limit=2)

    assert [o["id"] for o in output.outcomes] == ["26:q0", "26:q1"]


async def test_longmemeval_is_ranked_at_the_question_date(
    fake_pool: Any, fast_config: Config
) -> None:
    benchmark = load_longmemeval_bench(FIXTURES / "longmemeval" / "longmemeval_s_slice.json")

    output = await run_benchmark(
        benchmark, fast_config, RunOptions(budgets=(500,), progress=False), pool=fake_pool
    )

    _, (_, reference) = fake_pool.opened[0].pipeline.calls
    assert reference is not None and reference.isoformat() == "2023-05-30T23:40:00"
    assert output.outcomes[0]["gold"]


def test_primary_budget_is_the_one_closest_to_the_configured_default() -> None:
    assert primary_budget([750, 1500, 3000], 1500) == 1500
    assert primary_budget([750, 3000], 1500) == 750
    assert primary_budget([4000], 1500) == 4000


async def test_each_question_counts_the_gold_a_cascades_first_pass_keeps_at_each_cut(
    fake_pool: Any,
) -> None:
    output = await run_locomo(fake_pool, cascade_cuts=(1, 20))

    for outcome in output.outcomes:
        kept = outcome["first_pass_found"]
        assert set(kept) == {"1", "20"}
        assert set(kept["1"]) <= set(kept["20"]) <= set(outcome["candidate_found"])
        # the fake ranks at most 20 candidates: a cut of 20 keeps every one
        assert kept["20"] == outcome["candidate_found"]
    assert any(o["first_pass_found"]["1"] for o in output.outcomes)


async def test_without_cascade_cuts_nothing_is_counted(fake_pool: Any) -> None:
    output = await run_locomo(fake_pool)

    assert all(outcome["first_pass_found"] == {} for outcome in output.outcomes)


def staged_benchmark() -> Benchmark:
    """Two sessions of three turns; questions asked in the first session, at the start of
    the second, and after both."""
    sessions = [
        SessionInput(
            f"s{s}",
            [TurnInput(f"turn {s}-{p} about kites", metadata={"n": f"{s}-{p}"}) for p in range(3)],
        )
        for s in range(2)
    ]

    def ask(qid: str, gold: list[str], at: tuple[int, int] | None) -> BenchQuestion:
        return BenchQuestion(qid, "kites", "c", "", gold, asked_at=at)

    questions = [
        ask("after", ["1-2"], None),
        ask("second", ["0-2", "1-0"], (1, 0)),
        ask("first", ["0-0", "0-1"], (0, 2)),
    ]
    labeler = lambda session_id, position, turn: [turn.metadata["n"]]  # noqa: E731
    return Benchmark("staged", "test", [Haystack("h", sessions, questions, labeler, "A")], ("c",))


async def test_a_question_asked_during_the_conversation_sees_only_the_turns_before_it(
    fake_pool: Any, fast_config: Config
) -> None:
    options = RunOptions(budgets=(1000,), baselines=("full-context",), progress=False)

    output = await run_benchmark(staged_benchmark(), fast_config, options, pool=fake_pool)

    by_id = {o["id"]: o for o in output.outcomes}
    assert [o["id"] for o in output.outcomes] == ["first", "second", "after"]
    returned = {
        qid: len(o["systems"]["smartsearch"]["1000"]["returned"]) for qid, o in by_id.items()
    }
    assert returned == {"first": 2, "second": 3, "after": 6}
    # "1-0" is said after the second question is asked: not gold, reported unresolved
    assert by_id["second"]["gold_labels"] == ["0-2", "1-0"]
    assert by_id["second"]["unresolved_evidence"] == ["1-0"]
    assert len(by_id["second"]["gold"]) == 1
    assert by_id["first"]["full_context_tokens"] < by_id["after"]["full_context_tokens"]
    assert {o["half"] for o in output.outcomes} == {"A"}
    (haystack,) = output.haystacks
    assert (haystack["turns"], haystack["input_turns"], haystack["half"]) == (6, 6, "A")
    # the first session, remembered in two parts, is one session
    first_part = {t["session_id"] for t in by_id["first"]["gold_turns"].values()}
    second_part = {t["session_id"] for t in by_id["second"]["gold_turns"].values()}
    assert first_part == second_part == {"s0"}
