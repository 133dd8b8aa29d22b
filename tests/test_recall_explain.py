"""`explain` on the recall tool and `--explain` on the command line: the same trace the
pipeline wrote, in the structured result and as text; without it, nothing changes."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client
from servers import LEXICAL_TOML

from smartsearch_mcp.cli import main
from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server

LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)
TURNS = [
    {"text": "I adopted a puppy named Biscuit last week!", "speaker": "Ann"},
    {"text": "What breed is Biscuit?", "speaker": "Bo"},
    {"text": "A golden retriever. We go hiking on weekends.", "speaker": "Ann"},
]


@pytest.mark.anyio
async def test_the_recall_tool_explains_when_asked_and_answers_as_before_otherwise(tmp_path):
    server = create_server(LEXICAL, str(tmp_path / "m.db"))
    with anyio.fail_after(30):
        async with Client(server) as client:
            await client.call_tool("remember", {"turns": TURNS, "session_id": "chat"})
            plain = await client.call_tool("recall", {"query": "Biscuit puppy"})
            explained = await client.call_tool(
                "recall", {"query": "Biscuit puppy", "explain": True}
            )
    assert "explain" not in plain.structured_content
    assert explained.content[0].text == plain.content[0].text
    why = explained.structured_content.pop("explain")
    assert explained.structured_content == plain.structured_content
    assert [p["id"] for p in why["passages"]] == [
        p["id"] for p in plain.structured_content["passages"]
    ]
    first = why["passages"][0]
    assert first["rankers"][0]["ranker"] == "lexical" and first["rankers"][0]["rank"] == 1
    assert first["channels"] and first["kept"] is True
    assert why["cut"]["stop_reason"] == plain.structured_content["stop_reason"]


def test_recall_explain_on_the_command_line_prints_the_trace_after_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    config = tmp_path / "lexical.toml"
    config.write_text(LEXICAL_TOML)
    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    monkeypatch.setenv("SMARTSEARCH_NAMESPACE", "default")
    for turn in TURNS:
        assert main(["remember", turn["text"], "--speaker", turn["speaker"]]) == 0
    capsys.readouterr()
    assert main(["recall", "Biscuit puppy", "--local"]) == 0
    plain = capsys.readouterr().out
    assert main(["recall", "Biscuit puppy", "--local", "--explain"]) == 0
    explained = capsys.readouterr().out
    assert explained.startswith(plain.rstrip("\n"))
    why = explained[len(plain) :]
    assert "Why these passages:" in why and "--- cut:" in why and "lexical #1" in why
    assert main(["recall", "Biscuit puppy", "--local", "--json", "--explain"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["explain"]["passages"][0]["id"] == data["passages"][0]["id"]
    assert main(["recall", "Biscuit puppy", "--local", "--json"]) == 0
    assert "explain" not in json.loads(capsys.readouterr().out)
