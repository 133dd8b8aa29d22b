"""`bench agent`: the shipped agent memories — their labels, their coding sessions stored
through the Claude Code importer — and a run through `Memory.recall` with the lexical preset."""

from __future__ import annotations

import copy
import json

import anyio
import pytest

from smartsearch_mcp.bench import agent
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError


def test_every_label_of_the_shipped_memories_holds() -> None:
    memories = agent.load_memories()
    assert agent.check_memories(memories) == []
    assert len(memories) >= 8
    assert sum(len(m["questions"]) for m in memories) >= 80
    assert {m["kind"] for m in memories} == set(agent.KINDS)
    changed = [q for m in memories for q in m["questions"] if q.get("superseded")]
    assert len(changed) >= 15


def test_the_checker_finds_a_gold_turn_without_the_answer_and_a_superseded_turn_after_it():
    memories = copy.deepcopy(agent.load_memories())
    question = next(q for m in memories for q in m["questions"] if q.get("superseded"))
    question["answer"] = "a value no turn holds"
    question["gold"], question["superseded"] = question["superseded"][:1], question["gold"][:1]

    problems = agent.check_memories(memories)

    assert any("does not hold 'a value no turn holds'" in p for p in problems)
    assert any("is not before every gold turn" in p for p in problems)


def test_coding_sessions_are_stored_as_the_claude_code_hooks_store_them() -> None:
    spec = next(m for m in agent.load_memories() if m["format"] == "claude-code")
    sessions = agent.stored_sessions(spec)
    written = [t for t in spec["sessions"][0]["turns"] if t[0] != "tool"]

    first = sessions[0]
    assert [t.text for t in first.turns] == [t[1] for t in written]  # tool calls left out
    assert {t.role for t in first.turns} == {"user", "assistant"}
    assert first.session_id.startswith("claude-code:")
    assert all(t.metadata["source"] == "claude-code" for t in first.turns)
    assert all(t.metadata["capture_key"] for t in first.turns)
    stamps = [t.timestamp for t in first.turns]
    assert stamps == sorted(stamps)


def test_an_unreadable_file_is_a_clear_error(tmp_path) -> None:
    path = tmp_path / "memories.json"
    path.write_text(json.dumps({"memories": "not a list"}), encoding="utf-8")
    with pytest.raises(InputError, match="not an agent-memories file"):
        agent.load_memories(path)


@pytest.fixture(scope="module")
def lexical_run():
    memories = agent.load_memories()
    outcomes = anyio.run(agent.run_agent, Config.load("lexical"), memories)
    return memories, outcomes


def test_a_lexical_run_asks_every_query_and_reports_each_kind(lexical_run) -> None:
    memories, outcomes = lexical_run
    queries = sum(
        len(m["questions"]) + len(m.get("vague", [])) + len(m.get("contentless", []))
        for m in memories
    )
    assert len(outcomes) == queries
    summary = agent.summarize_agent(outcomes)
    assert set(summary) == {*agent.KINDS, "all"}
    assert summary["all"]["questions"] == sum(len(m["questions"]) for m in memories)
    # Words the question shares with its answer are found by grep alone
    assert summary["all"]["answer_returned"] > 0.5
    report = agent.format_agent(summary, outcomes, "lexical")
    assert "| coding |" in report and "| all |" in report


def test_current_first_needs_the_current_value_above_every_one_it_replaced() -> None:
    def outcome(gold: int | None, old: int | None) -> agent.AgentOutcome:
        return agent.AgentOutcome(
            "m", "team", "precise", "q", 3, 10, gold, old, has_superseded=True
        )

    assert agent.current_first(outcome(1, 2))
    assert agent.current_first(outcome(2, None))
    assert not agent.current_first(outcome(3, 1))
    assert not agent.current_first(outcome(None, None))


def test_ablations_turn_off_only_what_the_preset_has_on() -> None:
    config = Config.load("offline")
    runs = agent.ablations(config)
    assert set(runs) == {f"without {name}" for name in config.rank.adjust}
    without = runs["without reply_credit"].rank
    assert "reply_credit" not in without.adjust and "echo_discount" in without.adjust
    assert without.reply_credit == config.rank.reply_credit  # only the list changes
    assert agent.ablations(Config.load("default")).keys() <= runs.keys()
