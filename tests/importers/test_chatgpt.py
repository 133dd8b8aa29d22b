import json
import zipfile
from pathlib import Path

import pytest

from smartsearch_mcp.importers.chatgpt import parse_chatgpt_export, read_chatgpt
from smartsearch_mcp.types import InputError, TurnInput

EXPORT = Path(__file__).parents[1] / "fixtures" / "exports" / "chatgpt_conversations.json"


def load_export() -> list[dict]:
    return json.loads(EXPORT.read_text(encoding="utf-8"))


def test_only_the_current_branch_is_imported_without_system_tool_or_hidden_messages() -> None:
    lisbon, _ = read_chatgpt(EXPORT)

    assert lisbon.session_id == "chatgpt:6a1c0f3e-0000-4000-8000-000000000001"
    assert [(t.role, t.text) for t in lisbon.turns] == [
        ("user", "What should I pack for Lisbon in March?"),
        ("assistant", "Pack layers and a light rain jacket."),
        ("user", "Is this jacket warm enough?"),
        ("assistant", "Yes: March in Lisbon is mild, around 15°C."),
    ]


def test_turn_carries_epoch_time_title_and_message_id() -> None:
    lisbon, _ = read_chatgpt(EXPORT)

    assert lisbon.turns[0] == TurnInput(
        text="What should I pack for Lisbon in March?",
        speaker="user",
        role="user",
        timestamp="1710000010.5",
        metadata={"source": "chatgpt", "title": "Packing for Lisbon", "message_id": "u1"},
    )
    assert lisbon.turns[1].timestamp == "1710000030"


def test_image_parts_are_dropped_but_noted_and_missing_times_fall_back_to_the_conversation() -> (
    None
):
    lisbon, _ = read_chatgpt(EXPORT)

    image_turn = lisbon.turns[2]
    assert image_turn.metadata is not None
    assert image_turn.metadata["omitted_parts"] == ["image_asset_pointer"]
    assert image_turn.timestamp == "1710000000.25"


def test_without_current_node_the_newest_branch_is_followed() -> None:
    _, regex = read_chatgpt(EXPORT)

    assert regex.session_id == "chatgpt:6a1c0f3e-0000-4000-8000-000000000002"
    assert [t.text for t in regex.turns] == [
        "How do I match a date like 2024-03-15?",
        "Try ^\\d{4}-\\d{2}-\\d{2}$ to match the whole string.",
    ]


def test_conversations_without_text_are_left_out() -> None:
    session_ids = [s.session_id for s in read_chatgpt(EXPORT)]

    assert "chatgpt:6a1c0f3e-0000-4000-8000-000000000003" not in session_ids


def test_export_zip_is_read_from_its_conversations_json(tmp_path: Path) -> None:
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("chat.html", "<html></html>")
        zipped.writestr("conversations.json", EXPORT.read_text(encoding="utf-8"))

    assert list(read_chatgpt(archive)) == list(read_chatgpt(EXPORT))


def test_zip_without_conversations_json_raises(tmp_path: Path) -> None:
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("notes.txt", "hello")

    with pytest.raises(InputError, match=r"zip file without conversations\.json"):
        read_chatgpt(archive)


def test_claude_export_is_refused_with_a_hint() -> None:
    claude_like = [{"uuid": "x", "chat_messages": []}]

    with pytest.raises(InputError, match=r"not look like a ChatGPT export.*use format 'claude'"):
        parse_chatgpt_export(claude_like)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"conversations": []}, "expected a list of conversations, got an object"),
        (["text"], "conversation 0 is a string, not an object"),
        ([{"title": "t", "mapping": {"a": {"parent": None}}, "current_node": "zz"}], "'zz'"),
        (
            [{"mapping": {"a": {"parent": "ghost", "message": None}}, "current_node": "a"}],
            "node 'ghost' is missing",
        ),
        (
            [{"mapping": {"a": {"parent": "b"}, "b": {"parent": "a"}}, "current_node": "a"}],
            "its own ancestor",
        ),
    ],
)
def test_structurally_wrong_exports_raise_input_errors(data: object, message: str) -> None:
    with pytest.raises(InputError, match="does not look like a ChatGPT export") as raised:
        parse_chatgpt_export(data)

    assert message in str(raised.value)


def test_a_single_conversation_object_is_accepted() -> None:
    [lisbon] = parse_chatgpt_export(load_export()[0])

    assert len(lisbon.turns) == 4


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text("[{", encoding="utf-8")

    with pytest.raises(InputError, match="is not valid JSON"):
        read_chatgpt(path)
