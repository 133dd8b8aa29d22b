"""`bench compare`: two runs of one benchmark paired by question, and a verdict only where
the interval of the difference, resampled by conversation, leaves no doubt."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from smartsearch_mcp.bench.cli import run_bench
from smartsearch_mcp.bench.compare import compare_runs
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError


def _run(recalls: dict[str, list[float]], bench: str = "locomo") -> dict[str, Any]:
    """A results dict: per conversation, one question per recall (at budgets 500 and 1000,
    the second one's recall one point higher, capped at 1)."""
    questions = []
    for index, (conversation, values) in enumerate(sorted(recalls.items())):
        for number, recall in enumerate(values):
            questions.append(
                {
                    "id": f"{conversation}:{number}",
                    "haystack": conversation,
                    "half": "AB"[index % 2],
                    "systems": {
                        "smartsearch": {
                            "500": {"recall": recall},
                            "1000": {"recall": min(1.0, recall + 0.1)},
                        },
                        "bm25": {"500": {"recall": 0.0}},
                    },
                }
            )
    questions.append({"id": "no-gold", "haystack": "c0", "half": "A", "systems": {}})
    return {"bench": bench, "questions": questions}


def _noisy(seed: int, shift: float = 0.0) -> dict[str, list[float]]:
    rng = random.Random(seed)
    return {
        f"c{c}": [min(1.0, max(0.0, rng.random() + shift)) for _ in range(12)] for c in range(8)
    }


def test_a_change_that_lifts_every_conversation_helps_and_one_that_lowers_them_hurts():
    before = _run(_noisy(1))
    lifted = _run({c: [min(1.0, r + 0.2) for r in v] for c, v in _noisy(1).items()})
    lowered = _run({c: [max(0.0, r - 0.2) for r in v] for c, v in _noisy(1).items()})
    up = compare_runs(before, lifted)
    down = compare_runs(before, lowered)
    assert [d.budget for d in up] == ["500", "1000"]
    assert all(d.verdict == "helps" and 0 < d.low <= d.mean <= d.high for d in up)
    assert all(d.verdict == "hurts" and d.low <= d.mean <= d.high < 0 for d in down)
    assert up[0].questions == 96 and up[0].conversations == 8  # the no-gold one is left out
    assert up[0].worse == 0 < up[0].better


def test_two_unrelated_draws_of_noise_make_no_clear_difference():
    differences = compare_runs(_run(_noisy(1)), _run(_noisy(2)))
    assert all(d.verdict == "no clear difference" for d in differences)
    assert all(d.low < 0 < d.high for d in differences)
    same = compare_runs(_run(_noisy(1)), _run(_noisy(1)))
    assert all((d.mean, d.low, d.high, d.better, d.worse) == (0, 0, 0, 0, 0) for d in same)


def test_the_interval_resamples_conversations_not_only_questions():
    # One conversation gains a lot, the seven others nothing: a question-level bootstrap
    # would call this a sure gain; over conversations it is one conversation's luck.
    flat = {f"c{c}": [0.5] * 12 for c in range(8)}
    lucky = {**flat, "c0": [1.0] * 12}
    [difference, _] = compare_runs(_run(flat), _run(lucky))
    assert difference.mean == pytest.approx(0.5 / 8)
    assert difference.low == 0 and difference.verdict == "no clear difference"


def test_a_half_compares_only_its_questions():
    before = _run(_noisy(1))
    after = _run(
        {
            c: [min(1.0, r + 0.2) if c in ("c1", "c3") else r for r in v]
            for c, v in _noisy(1).items()
        }
    )
    b = compare_runs(before, after, half="B")
    a = compare_runs(before, after, half="A")
    assert b[0].conversations == a[0].conversations == 4
    assert b[0].mean > 0 and a[0].mean == 0


def test_runs_that_cannot_be_paired_are_refused_with_the_reason():
    with pytest.raises(InputError, match="different benchmarks"):
        compare_runs(_run(_noisy(1)), _run(_noisy(1), bench="beam"))
    with pytest.raises(InputError, match="share no question"):
        compare_runs(_run({"x": [0.5]}), _run({"y": [0.5]}))
    with pytest.raises(InputError, match="share no question of half B"):
        compare_runs(_run({"x": [0.5]}), _run({"x": [0.5]}), half="B")
    with pytest.raises(InputError, match="share no question"):
        compare_runs(_run({"x": [0.5]}), _run({"x": [0.5]}), system="nothing")


def test_the_command_prints_the_table_and_refuses_a_folder_without_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    for name, shift in (("before", 0.0), ("after", 0.2)):
        (tmp_path / name).mkdir()
        data = _run({c: [min(1.0, r + shift) for r in v] for c, v in _noisy(1).items()})
        (tmp_path / name / "results.json").write_text(json.dumps(data))
    argv = ["compare", str(tmp_path / "before"), str(tmp_path / "after")]
    assert run_bench(argv, Config(), None) == 0
    table = capsys.readouterr().out
    assert "| 500 |" in table and "| 1,000 |" in table and table.count("| helps |") == 2
    with pytest.raises(InputError, match="share no question of half val"):
        run_bench([*argv, "--half", "val"], Config(), None)  # QMSum's halves are named
    with pytest.raises(InputError, match=r"no results\.json"):
        run_bench(["compare", str(tmp_path), str(tmp_path / "after")], Config(), None)
