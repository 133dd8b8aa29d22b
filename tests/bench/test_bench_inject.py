"""`bench inject`: the prompts file loads, and a recall is judged as the hook would inject it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from smartsearch_mcp.bench.inject import (
    NAMESPACE,
    PromptCase,
    Recalled,
    judge,
    load_prompts,
    summarize,
)
from smartsearch_mcp.bench.small import load_memories
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import InputError

COUNTER = get_token_counter("o200k_base")


def test_the_shipped_prompts_have_three_kinds_and_name_real_turns():
    cases = load_prompts()
    kinds = {k: sum(c.kind == k for c in cases) for k in ("answerable", "unrelated", "follow-up")}
    assert len(cases) >= 40 and min(kinds.values()) >= 10
    memories = {m["name"]: m for m in load_memories()}
    for case in cases:
        sessions = {s["id"]: s for s in memories[case.memory]["sessions"]}
        for gold in case.gold:
            session, index = gold.split("#")
            assert int(index) < len(sessions[session]["turns"]), gold
        assert bool(case.gold) == (case.kind == "answerable")


def test_a_file_that_is_not_a_prompts_file_is_refused_naming_it(tmp_path: Path):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"prompts": [{"memory": "m", "kind": "odd", "prompt": "x"}]}))
    with pytest.raises(InputError, match="unknown prompt kinds"):
        load_prompts(bad)


def _passage(turn_id: int, text: str, **fields: Any) -> dict[str, Any]:
    values = {"id": turn_id, "session_id": "s1", "namespace": NAMESPACE, "speaker": "Dana"}
    values.update(role="user", text=text, timestamp="2026-11-01T10:00:00", confidence=0.9)
    return {**values, **fields}


def test_a_judged_recall_counts_answers_false_injections_and_leaks():
    porto = "We booked an Airbnb in Porto for February."
    answerable = Recalled(
        PromptCase("prompts", "m", "answerable", "Which Airbnb in Porto did we book?", ["s1#0"]),
        "server",
        [_passage(1, porto), _passage(2, porto, session_id="current-0")],
        [1],
        "current-0",
    )
    unrelated = Recalled(
        PromptCase("prompts", "m", "unrelated", "write a haiku"),
        "server",
        [_passage(3, porto)],
        [],
        "current-1",
    )
    judged = judge([answerable, unrelated], 0.3, 2, 400, COUNTER)
    assert [j.injected for j in judged] == [[1], []]
    numbers = summarize(judged)["prompts/server"]
    assert (numbers["answer_injected"], numbers["false_injections"], numbers["leaks"]) == (
        1.0,
        0.0,
        0,
    )
    assert numbers["mean_tokens"] == judged[0].tokens / 2 > 0


def test_the_cpu_time_of_finished_child_processes_is_counted():
    import subprocess
    import sys

    from smartsearch_mcp.bench.inject import children_cpu_s

    before = children_cpu_s()
    subprocess.run([sys.executable, "-c", "sum(range(3_000_000))"], check=True)
    assert children_cpu_s() - before > 0
