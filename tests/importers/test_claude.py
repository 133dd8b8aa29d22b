import zipfile
from pathlib import Path

import pytest

from smartsearch_mcp.importers.claude import parse_claude_export, read_claude
from smartsearch_mcp.types import InputError, TurnInput

EXPORT = Path(__file__).parents[1] / "fixtures" / "exports" / "claude_conversations.json"


def test_each_conversation_with_text_becomes_a_session() -> None:
    [bread] = read_claude(EXPORT)

    assert bread.session_id == "claude:0b7e2a9c-0000-4000-8000-00000000000a"
    assert [(t.role, t.speaker) for t in bread.turns] == [
        ("user", "user"),
        ("assistant", "assistant"),
        ("user", "user"),
    ]


def test_human_turn_keeps_its_text_time_and_attachment_names() -> None:
    [bread] = read_claude(EXPORT)

    assert bread.turns[0] == TurnInput(
        text="How long should I proof my sourdough?",
        speaker="user",
        role="user",
        timestamp="2024-05-01T10:00:05.000000Z",
        metadata={
            "source": "claude",
            "title": "Sourdough timing",
            "message_id": "m-1",
            "attachments": ["recipe.txt"],
        },
    )


def test_empty_text_falls_back_to_the_text_content_blocks() -> None:
    [bread] = read_claude(EXPORT)

    assert bread.turns[1].text == (
        "Usually 4 to 6 hours at room temperature.\n\nAt 24°C, aim for about 5 hours."
    )


def test_message_without_time_falls_back_to_the_conversation_time() -> None:
    [bread] = read_claude(EXPORT)

    assert bread.turns[2].text == "Thanks!"
    assert bread.turns[2].timestamp == "2024-05-01T10:00:00.000000Z"


def test_unknown_sender_is_kept_with_role_other() -> None:
    data = [{"uuid": "u", "chat_messages": [{"sender": "system", "text": "Note"}]}]

    [session] = parse_claude_export(data)

    assert session.turns[0].role == "other"
    assert session.turns[0].speaker == "system"


def test_export_zip_is_read_from_its_conversations_json(tmp_path: Path) -> None:
    archive = tmp_path / "claude-export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("data-2024/users.json", "[]")
        zipped.writestr("data-2024/conversations.json", EXPORT.read_text(encoding="utf-8"))

    assert list(read_claude(archive)) == list(read_claude(EXPORT))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("conversations", "expected a list of conversations, got a string"),
        ([{"uuid": "x"}], "conversation 0 has no 'chat_messages' list"),
        ([{"uuid": "x", "mapping": {}}], "use format 'chatgpt'"),
        ([{"uuid": "x", "chat_messages": ["hi"]}], "message 0 is a string, not an object"),
        ([{"uuid": "x", "chat_messages": [{"text": "hi"}]}], "message 0 has no 'sender'"),
    ],
)
def test_structurally_wrong_exports_raise_input_errors(data: object, message: str) -> None:
    with pytest.raises(InputError, match="does not look like a Claude export") as raised:
        parse_claude_export(data)

    assert message in str(raised.value)
