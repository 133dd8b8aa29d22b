"""Telling an import file's format from its contents (`import FILE` without --format)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from smartsearch_mcp.importers import read_sessions
from smartsearch_mcp.importers.detect import detect_format
from smartsearch_mcp.types import InputError

FIXTURES = Path(__file__).parent.parent / "fixtures"
EXPORTS = FIXTURES / "exports"


@pytest.mark.parametrize(
    ("path", "fmt"),
    [
        (EXPORTS / "chatgpt_conversations.json", "chatgpt"),
        (EXPORTS / "claude_conversations.json", "claude"),
        (EXPORTS / "turns.jsonl", "jsonl"),
        (FIXTURES / "claude_code", "claude-code"),
    ],
)
def test_each_fixture_is_read_as_its_own_format(path: Path, fmt: str) -> None:
    assert detect_format(path) == fmt
    assert list(read_sessions(path, detect_format(path)))


def test_a_claude_code_transcript_file_is_told_from_an_export_jsonl() -> None:
    transcript = next((FIXTURES / "claude_code").rglob("*.jsonl"))

    assert detect_format(transcript) == "claude-code"


def test_a_zip_export_is_told_by_its_conversations_json(tmp_path: Path) -> None:
    for name, fmt in (
        ("chatgpt_conversations.json", "chatgpt"),
        ("claude_conversations.json", "claude"),
    ):
        archive = tmp_path / f"{fmt}.zip"
        with zipfile.ZipFile(archive, "w") as zipped:
            zipped.writestr("chat.html", "<html></html>")
            zipped.writestr("export/conversations.json", (EXPORTS / name).read_text())
        assert detect_format(archive) == fmt


def test_a_pretty_printed_single_conversation_is_a_json_export(tmp_path: Path) -> None:
    conversation = json.loads((EXPORTS / "claude_conversations.json").read_text())[0]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(conversation, indent=2))

    assert detect_format(path) == "claude"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("just some notes\n", "not JSON or JSONL"),
        ('[{"title": "no messages here"}]', "neither a ChatGPT export"),
        ('{"a": 1}\n{"b": 2}\n', "neither a ChatGPT export"),
        ("", "not JSON or JSONL"),
    ],
)
def test_a_file_of_no_known_format_says_to_pass_format(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "mystery.txt"
    path.write_text(content)

    with pytest.raises(InputError, match=rf"{message}.*pass --format"):
        detect_format(path)


def test_a_zip_without_an_export_says_to_pass_format(tmp_path: Path) -> None:
    archive = tmp_path / "photos.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("a.txt", "hello")

    with pytest.raises(InputError, match=r"without conversations\.json.*pass --format"):
        detect_format(archive)
