"""QA accuracy against a local fake OpenAI-compatible server (never the internet)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import smartsearch_mcp.bench.runner as runner_module
from smartsearch_mcp.bench.cli import run_bench
from smartsearch_mcp.bench.qa import (
    ChatClient,
    QAError,
    QAEvaluator,
    format_context,
    parse_judgment,
)
from smartsearch_mcp.config import Config
from smartsearch_mcp.types import Candidate, Passage, Scored, Turn

FIXTURES = Path(__file__).parents[1] / "fixtures"


def scored(turn_id: int, session: str, position: int, text: str, when: str) -> Scored:
    turn = Turn(
        id=turn_id,
        namespace="ns",
        session_id=session,
        position=position,
        speaker="Caroline",
        role="other",
        text=text,
        timestamp=when,
        timestamp_raw=when,
        created_at=when,
        metadata={},
    )
    return Scored(Candidate(Passage(turn, 0, len(text)), 1.0), 1.0)


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("CORRECT", True),
        ("correct.", True),
        ("WRONG", False),
        ("INCORRECT", False),
        ("The answer is incorrect", False),
        ("maybe", None),
    ],
)
def test_parse_judgment_tells_incorrect_from_correct(text: str, verdict: bool | None) -> None:
    assert parse_judgment(text) == verdict


def test_format_context_groups_passages_by_session_in_time_order_with_dates() -> None:
    passages = [
        scored(3, "s2", 0, "Later news.", "2023-06-01T10:00:00"),
        scored(2, "s1", 1, "Second line.", "2023-05-08T13:56:00"),
        scored(1, "s1", 0, "First line.", "2023-05-08T13:56:00"),
    ]

    text = format_context(passages)

    assert text.splitlines() == [
        "Session s1 (2023-05-08):",
        "  Caroline: First line.",
        "  Caroline: Second line.",
        "Session s2 (2023-06-01):",
        "  Caroline: Later news.",
    ]
    assert format_context([]) == "(no memories recalled)"


def test_client_posts_a_chat_completion_with_the_key_as_bearer(fake_llm: Any) -> None:
    client = ChatClient(fake_llm.base_url, "sk-test")

    assert client.complete("tiny", "Where was the support group?") == "support group"
    (request,) = fake_llm.requests
    assert request["model"] == "tiny"
    assert request["temperature"] == 0
    assert request["messages"] == [{"role": "user", "content": "Where was the support group?"}]
    assert fake_llm.headers[0]["Authorization"] == "Bearer sk-test"


def test_client_errors_name_the_endpoint(fake_llm: Any) -> None:
    with pytest.raises(QAError, match="HTTP 404"):
        ChatClient(fake_llm.base_url + "/wrong", None).complete("m", "hi")
    with pytest.raises(QAError, match="could not reach"):
        ChatClient("http://127.0.0.1:9", None, timeout_s=2).complete("m", "hi")


def test_evaluator_answers_from_context_then_judges(fake_llm: Any) -> None:
    evaluator = QAEvaluator(ChatClient(fake_llm.base_url, None), "answerer", "judge")
    context = [scored(1, "s1", 0, "I went to a support group.", "2023-05-08T13:56:00")]

    outcome = evaluator.evaluate_sync(
        "Where did Caroline go?", "support group", context, datetime(2023, 5, 25)
    )

    assert outcome == {"answer": "support group", "judgment": "CORRECT", "correct": True}
    answer_request, judge_request = fake_llm.requests
    assert answer_request["model"] == "answerer"
    assert "I went to a support group." in answer_request["messages"][0]["content"]
    assert "25 May 2023" in answer_request["messages"][0]["content"]
    assert judge_request["model"] == "judge"


def test_bench_reports_qa_accuracy_per_category(
    fake_llm: Any,
    fake_pool: Any,
    fast_config: Config,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(runner_module, "MemoryPool", lambda config, **_: fake_pool)
    monkeypatch.setenv("FAKE_LLM_KEY", "sk-local")
    out = tmp_path / "qa"

    qa_options = "--answer-model answerer --judge-model judge --api-key-env FAKE_LLM_KEY"
    argv = ["locomo", str(FIXTURES / "locomo"), "--out", str(out), "--no-progress"]
    argv += ["--no-plots", "--base-url", fake_llm.base_url, *qa_options.split()]

    code = run_bench(argv, fast_config, None)

    assert code == 0
    data = json.loads((out / "results.json").read_text())
    assert data["qa_settings"]["answer_model"] == "answerer"
    assert "sk-local" not in (out / "results.json").read_text()
    assert all(q["qa"]["judgment"] in {"CORRECT", "WRONG"} for q in data["questions"])
    qa = data["summary"]["qa"]
    assert 0.0 <= qa["overall"]["accuracy"] <= 1.0
    assert qa["overall"]["n"] == 5
    assert "QA accuracy (LLM judge)" in (out / "summary.md").read_text()
    assert fake_llm.headers[0]["Authorization"] == "Bearer sk-local"


def test_qa_needs_a_model_and_a_base_url(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="--answer-model and --base-url"):
        run_bench(
            ["locomo", str(FIXTURES / "locomo"), "--judge-model", "j", "--out", str(tmp_path)],
            Config(),
            None,
        )
