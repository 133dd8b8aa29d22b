"""`recall` through the command line: in this process, and through a running HTTP server
(smartsearch_mcp/cli/recall.py)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from smartsearch_mcp.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_recall_prints_sessions_with_dates_and_json_on_request(env, capsys):
    main(
        [
            "import",
            str(FIXTURES / "exports" / "turns.jsonl"),
            "--format",
            "jsonl",
            "--no-progress",
        ]
    )
    capsys.readouterr()
    assert main(["recall", "When does the release move?", "--namespace", "work"]) == 0
    text = capsys.readouterr().out
    assert "Friday" in text and "2024-03-15" in text
    head = re.match(r"(\d+) (passages?) from (\d+) (sessions?) \(", text)
    assert head, text
    for count, noun in ((head[1], head[2]), (head[3], head[4])):
        assert noun.endswith("s") == (count != "1"), head[0]
    assert main(["recall", "release Friday", "--namespace", "work", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passages"][0]["text"] == "The release moves to Friday."
    assert data["rankers"] == ["lexical"]


def test_recall_with_a_bad_budget_is_a_clear_error(env, capsys):
    assert main(["remember", "a note"]) == 0
    assert main(["recall", "anything", "--max-tokens", "0"]) == 2
    assert "--max-tokens must be between" in capsys.readouterr().err


def test_a_recall_of_an_empty_namespace_says_where_the_turns_are(env, capsys):
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["recall", "release Friday", "--namespace", "elsewhere"]) == 0
    out = capsys.readouterr().out
    assert "No stored memory matched" in out
    assert "namespace 'elsewhere' holds no turns" in out and "'work'" in out


def test_a_recall_of_an_empty_memory_loads_no_model(env):
    script = (
        "import sys; from smartsearch_mcp.cli import main; "
        "assert main(['remember', 'a note elsewhere', '--namespace', 'other']) == 0; "
        "code = main(['--config', 'offline', 'recall', 'what did we decide?', "
        "'--namespace', 'work']); "
        "heavy = ('spacy', 'torch', 'sentence_transformers'); "
        "print(sorted(m for m in heavy if m in sys.modules)); "
        "sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.anyio
async def test_recall_through_a_running_http_server_answers_from_its_memory(
    env, capsys, monkeypatch
):
    from servers import http_server

    served = env / "served.db"
    monkeypatch.chdir(env)
    remember = ["remember", "The gate code is 4711.", "--db", str(served)]
    assert await anyio.to_thread.run_sync(main, remember) == 0
    async with http_server(served, env / "lexical.toml") as (base, _):
        capsys.readouterr()
        # An empty local database: only the server's memory can answer.
        argv = ["recall", "gate code", "--db", str(env / "empty.db"), "--server", f"{base}/mcp"]
        assert await anyio.to_thread.run_sync(main, argv) == 0
        out, err = capsys.readouterr()
        assert "The gate code is 4711." in out
        assert "searched namespace 'default'" in err
        assert await anyio.to_thread.run_sync(main, [*argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["passages"]


@pytest.mark.anyio
async def test_recall_through_a_server_without_its_token_says_it_needs_the_token(
    env, capsys, monkeypatch
):
    from servers import http_server

    monkeypatch.chdir(env)
    monkeypatch.delenv("SMARTSEARCH_TOKEN", raising=False)
    token = ["--token", "s3cret-t0ken-0123456789"]
    async with http_server(env / "served.db", env / "lexical.toml", *token) as (base, _):
        capsys.readouterr()
        argv = ["recall", "gate code", "--server", f"{base}/mcp"]
        assert await anyio.to_thread.run_sync(main, argv) == 1
        assert "needs its bearer token (no token given)" in capsys.readouterr().err
        monkeypatch.setenv("SMARTSEARCH_TOKEN", "wrong")
        assert await anyio.to_thread.run_sync(main, argv) == 1
        assert "token in $SMARTSEARCH_TOKEN was refused" in capsys.readouterr().err


def test_recall_through_a_server_that_is_not_there_says_what_to_do(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    monkeypatch.setenv("SMARTSEARCH_URL", "http://127.0.0.1:9/mcp")
    assert main(["recall", "anything"]) == 1
    err = capsys.readouterr().err
    assert "cannot recall through the server at http://127.0.0.1:9/mcp" in err
    assert "SMARTSEARCH_URL" in err
