"""`bench ui`: the synthetic memory it builds, and a small run end to end (the timings are
measured, never asserted)."""

from __future__ import annotations

from pathlib import Path

from smartsearch_mcp.bench.cli import run_bench
from smartsearch_mcp.bench.ui import (
    LONG_SESSION_TURNS,
    NEEDLE,
    QUESTIONS,
    WORDS,
    synthetic_sessions,
)
from smartsearch_mcp.config import Config

LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)


def test_the_synthetic_memory_has_the_turns_asked_one_long_session_and_one_needle():
    sessions = synthetic_sessions(5000, seed=1)
    assert sum(len(turns) for _, turns in sessions) == 5000
    assert sessions[-1][0] == "long" and len(sessions[-1][1]) == LONG_SESSION_TURNS
    assert sum(NEEDLE in t.text for _, turns in sessions for t in turns) == 1
    assert synthetic_sessions(5000, seed=1) == sessions


def test_a_small_bench_run_times_every_view(tmp_path: Path, capsys):
    out = tmp_path / "out"
    argv = ["ui", "--turns", "300", "--repeats", "2", "--out", str(out)]
    assert run_bench(argv, LEXICAL, None) == 0
    report = capsys.readouterr().out
    for view in ("overview", "session", "timeline", "grep", "search (recall replay)"):
        assert f"| {view} |" in report
    assert "300 turns, retrieval.mode = grep (" in report
    assert (out / "summary.md").exists()


def test_each_replayed_question_asks_about_words_the_memory_holds():
    for question in QUESTIONS:
        assert len(set(question.lower().split()) & set(WORDS)) >= 2, question
