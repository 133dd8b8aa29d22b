import json
import shutil
from pathlib import Path

import pytest

from smartsearch_mcp.importers.beam import BeamQuestion, flatten_message_ids, load_beam
from smartsearch_mcp.types import InputError, TurnInput

SPLIT = Path(__file__).parents[1] / "fixtures" / "beam"


def test_split_folder_loads_one_session_per_batch() -> None:
    [conversation] = load_beam(SPLIT)

    assert conversation.conversation_id == "1"
    assert [(s.session_id, len(s.turns)) for s in conversation.sessions] == [
        ("beam-1:batch-1", 8),
        ("beam-1:batch-2", 2),
    ]


def test_conversation_folder_loads_on_its_own() -> None:
    assert load_beam(SPLIT / "1") == load_beam(SPLIT)


def test_messages_carry_their_id_and_the_batch_time_anchor() -> None:
    [conversation] = load_beam(SPLIT)
    batch_1, batch_2 = conversation.sessions

    assert [turn.metadata for turn in batch_1.turns] == [{"message_id": i} for i in range(8)]
    assert {turn.timestamp for turn in batch_1.turns} == {"March-15-2024"}
    assert {turn.timestamp for turn in batch_2.turns} == {"April-05-2024"}
    assert [turn.role for turn in batch_1.turns[:2]] == ["user", "assistant"]


def test_trailing_plan_index_markers_are_stripped_unless_asked_not_to() -> None:
    [conversation] = load_beam(SPLIT)
    [raw] = load_beam(SPLIT, strip_index_markers=False)

    first = conversation.sessions[0].turns[0]
    assert first == TurnInput(
        text=(
            "I'm building a recipe planner and the demo is due on March 15, 2024; can you help me "
            "lay out the work week by week so I make it?"
        ),
        speaker="user",
        role="user",
        timestamp="March-15-2024",
        metadata={"message_id": 0},
    )
    assert raw.sessions[0].turns[0].text == first.text + " ->-> 1,1"


def test_probing_questions_flatten_gold_ids_and_keep_questions_without_gold() -> None:
    [conversation] = load_beam(SPLIT)

    by_ability = {q.ability: q for q in conversation.questions}
    assert by_ability["information_extraction"] == BeamQuestion(
        question="When is the recipe planner demo?",
        ability="information_extraction",
        answer="The demo is on March 15, 2024.",
        gold_message_ids=[28],
        difficulty="easy",
    )
    assert by_ability["contradiction_resolution"].gold_message_ids == [58, 24]
    assert by_ability["temporal_reasoning"].gold_message_ids == [2, 0]
    abstention = by_ability["abstention"]
    assert abstention.gold_message_ids == []
    assert not abstention.has_gold
    assert abstention.answer is not None
    assert abstention.answer.startswith("Nothing in the chat says")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, []),
        ([4, 60, 116], [4, 60, 116]),
        ({"original_info": [86], "updated_info": [114]}, [86, 114]),
        ({"original_info": [108], "updated_info": []}, [108]),
        ([116, 118, [136, 138]], [116, 118, 136, 138]),
        ([[24, 26, 28], [146], [202, 204], [262]], [24, 26, 28, 146, 202, 204, 262]),
        ([5, "7", None, "chat 9", True, 5], [5, 7]),
    ],
)
def test_flatten_message_ids_reads_every_source_chat_ids_shape(
    value: object, expected: list[int]
) -> None:
    assert flatten_message_ids(value) == expected


def test_missing_probing_questions_leave_the_conversation_without_questions(
    tmp_path: Path,
) -> None:
    shutil.copy(SPLIT / "1" / "chat.json", tmp_path / "chat.json")

    [conversation] = load_beam(tmp_path)

    assert conversation.questions == []
    assert len(conversation.sessions) == 2


def write_chat(folder: Path, chat: object, questions: object = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chat.json").write_text(json.dumps(chat))
    if questions is not None:
        (folder / "probing_questions").mkdir()
        (folder / "probing_questions" / "probing_questions.json").write_text(json.dumps(questions))
    return folder


def test_bare_messages_and_missing_batch_numbers_are_tolerated(tmp_path: Path) -> None:
    message = {"role": "user", "id": 0, "content": "hello", "time_anchor": "May-01-2024"}
    folder = write_chat(tmp_path / "7", [{"turns": [message], "time_anchor": None}])

    [conversation] = load_beam(tmp_path)

    assert conversation.sessions[0].session_id == "beam-7:batch-1"
    assert conversation.sessions[0].turns[0].timestamp == "May-01-2024"
    assert folder.name == conversation.conversation_id


@pytest.mark.parametrize(
    ("chat", "questions", "message"),
    [
        ({"turns": []}, None, "expected a list of batches, got an object"),
        ([{"batch_number": 1}], None, "a batch must be an object with a 'turns' list"),
        ([{"turns": [["hi"]]}], None, "a message must be an object, got a string"),
        ([{"turns": [[{"role": "user", "content": "x"}]]}], None, "integer 'id'"),
        ([{"turns": [[{"role": "user", "id": 1}]]}], None, "message 1 has no string 'content'"),
        ([], [], "expected an object of ability -> questions"),
        ([], {"temporal": {}}, "'temporal' must be a list of questions"),
        ([], {"temporal": [{"answer": "x"}]}, r"temporal\[0\] needs a string 'question'"),
    ],
)
def test_malformed_beam_files_raise_input_errors(
    tmp_path: Path, chat: object, questions: object, message: str
) -> None:
    write_chat(tmp_path / "1", chat, questions)

    with pytest.raises(InputError, match=message):
        load_beam(tmp_path)


def test_folder_without_conversations_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no chat\.json"):
        load_beam(tmp_path)


def test_a_file_path_raises(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text("[]")

    with pytest.raises(InputError, match="is not a folder"):
        load_beam(path)
