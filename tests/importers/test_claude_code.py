"""Claude Code transcripts: user and assistant text lines become turns, verbatim."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smartsearch_mcp.importers import read_sessions
from smartsearch_mcp.importers.claude_code import read_claude_code, read_transcript
from smartsearch_mcp.namespaces import project_namespace
from smartsearch_mcp.types import InputError

TRANSCRIPT = Path(__file__).parents[1] / "fixtures" / "claude_code" / "session.jsonl"


def test_only_conversation_text_is_kept_with_the_lines_own_timestamps_and_uuids():
    turns = read_transcript(TRANSCRIPT)
    assert [(t.turn.role, t.turn.metadata["capture_key"]) for t in turns] == [
        ("user", "u-003"),
        ("assistant", "a-002"),
        ("assistant", "a-004"),
    ]
    first = turns[0].turn
    assert first.text.startswith("The login page redirects to /undefined")
    assert first.timestamp == "2025-06-02T09:15:10.500Z"
    assert first.metadata["git_branch"] == "main"
    assert turns[2].turn.text.startswith("Found it: `params.get('next')`")


def test_a_directory_of_transcripts_imports_each_session_into_its_project(tmp_path: Path):
    project = tmp_path / "projects" / "-home-dev-projects-webapp"
    project.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, project / "one.jsonl")
    [(namespace, session)] = list(read_claude_code(tmp_path / "projects"))
    assert namespace == project_namespace("/home/dev/projects/webapp")
    assert session.session_id == "claude-code:7f3c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b"
    assert len(session.turns) == 3


def test_read_sessions_offers_the_claude_code_format():
    [imported] = list(read_sessions(TRANSCRIPT, "claude-code"))
    assert imported.namespace and imported.namespace.startswith("project:webapp-")


def test_a_file_with_no_conversation_lines_is_a_clear_error(tmp_path: Path):
    other = tmp_path / "x.jsonl"
    other.write_text(json.dumps({"text": "hello"}) + "\n")
    with pytest.raises(InputError, match="does not look like Claude Code transcripts"):
        list(read_claude_code(other))


def test_a_session_that_ran_outside_any_git_repository_goes_to_the_default_namespace(
    tmp_path: Path,
):
    plain = tmp_path / "notes"  # exists here and holds no .git: the hook's rule gives default
    plain.mkdir()
    transcript = tmp_path / "session.jsonl"
    lines = TRANSCRIPT.read_text().splitlines()
    transcript.write_text(
        "\n".join(
            json.dumps({**json.loads(line), "cwd": str(plain)}) if '"cwd"' in line else line
            for line in lines
        )
        + "\n"
    )
    [(namespace, _)] = list(read_claude_code(transcript))
    assert namespace == "default"
