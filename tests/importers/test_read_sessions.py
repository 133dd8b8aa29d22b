from pathlib import Path

import pytest

from smartsearch_mcp.dates import parse_timestamp
from smartsearch_mcp.importers import FORMATS, ImportedSession, read_sessions
from smartsearch_mcp.importers.chatgpt import read_chatgpt
from smartsearch_mcp.types import InputError

EXPORTS = Path(__file__).parents[1] / "fixtures" / "exports"


def test_user_facing_formats_are_jsonl_chatgpt_claude_and_claude_code() -> None:
    assert list(FORMATS) == ["jsonl", "chatgpt", "claude", "claude-code"]
    assert all(fmt.description for fmt in FORMATS.values())


def test_jsonl_sessions_carry_the_namespace_from_the_file() -> None:
    sessions = list(read_sessions(EXPORTS / "turns.jsonl", "jsonl"))

    assert [(s.namespace, s.session.session_id) for s in sessions] == [
        ("work", "standup-2024-03-15"),
        ("home", "groceries"),
        (None, sessions[2].session.session_id),
    ]


def test_export_sessions_have_no_namespace() -> None:
    sessions = list(read_sessions(str(EXPORTS / "chatgpt_conversations.json"), "chatgpt"))

    assert sessions == [
        ImportedSession(None, session)
        for session in read_chatgpt(EXPORTS / "chatgpt_conversations.json")
    ]
    [claude] = read_sessions(EXPORTS / "claude_conversations.json", "claude")
    assert claude.namespace is None


def test_unknown_format_lists_the_choices() -> None:
    with pytest.raises(InputError, match="unknown import format 'csv'; choose one of: jsonl"):
        read_sessions(EXPORTS / "turns.jsonl", "csv")


def test_a_bad_file_raises_before_any_session_is_returned(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    path.write_text('{"text": "good", "session_id": "a"}\n{"session_id": "b"}\n')

    with pytest.raises(InputError, match="line 2"):
        read_sessions(path, "jsonl")


def test_wrong_format_for_the_file_says_what_it_expected() -> None:
    with pytest.raises(InputError, match="does not look like a Claude export"):
        read_sessions(EXPORTS / "chatgpt_conversations.json", "claude")


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("turns.jsonl", "jsonl"),
        ("chatgpt_conversations.json", "chatgpt"),
        ("claude_conversations.json", "claude"),
    ],
)
def test_every_imported_timestamp_is_one_the_store_can_parse(name: str, fmt: str) -> None:
    timestamps = [
        turn.timestamp
        for imported in read_sessions(EXPORTS / name, fmt)
        for turn in imported.session.turns
        if turn.timestamp is not None
    ]

    assert timestamps
    for timestamp in timestamps:
        parse_timestamp(timestamp)
