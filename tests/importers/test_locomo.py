import json
from pathlib import Path

import pytest

from smartsearch_mcp.importers.locomo import LocomoQuestion, load_locomo, parse_evidence
from smartsearch_mcp.types import InputError, TurnInput

FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "locomo"
FIXTURE = FIXTURE_DIR / "26.json"


def fixture_data() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (["D1:3"], (["D1:3"], [])),
        (["D8:6; D9:17"], (["D8:6", "D9:17"], [])),
        (["D:11:26"], (["D11:26"], [])),
        (["D30:05"], (["D30:5"], [])),
        (["d2:4"], (["D2:4"], [])),
        (["D9:1 D4:4 D4:6"], (["D9:1", "D4:4", "D4:6"], [])),
        (["D1:3", "D1:3", "D1:3,D2:1"], (["D1:3", "D2:1"], [])),
        (["D1", "", 5, "see D2:2"], (["D2:2"], ["D1", "", "5", "see"])),
        ([], ([], [])),
    ],
)
def test_parse_evidence_normalizes_and_splits_entries(
    entries: list[object], expected: tuple[list[str], list[str]]
) -> None:
    assert parse_evidence(entries) == expected


def test_conversation_file_loads_sessions_in_order_with_dated_turns() -> None:
    [conversation] = load_locomo(FIXTURE)

    assert conversation.sample_id == "26"
    assert conversation.speakers == ("Caroline", "Melanie")
    assert [(s.session_id, len(s.turns)) for s in conversation.sessions] == [
        ("26:session_1", 5),
        ("26:session_2", 3),
    ]
    assert conversation.sessions[0].turns[0] == TurnInput(
        text="Hi Melanie! It's been ages, how is everything?",
        speaker="Caroline",
        role="other",
        timestamp="1:56 pm on 8 May, 2023",
        metadata={"dia_id": "D1:1"},
    )
    assert conversation.sessions[1].turns[0].timestamp == "1:14 pm on 25 May, 2023"


def test_image_caption_is_appended_to_the_text_and_kept_in_metadata() -> None:
    [conversation] = load_locomo(FIXTURE)

    caption = "a photo of a clay bowl on a wooden table next to a window"
    turn = conversation.sessions[0].turns[4]
    assert turn.text == (
        "I made a little blue bowl! It's a bit wonky but I was so proud of it. "
        f"[shared an image: {caption}]"
    )
    assert turn.metadata == {"dia_id": "D1:5", "blip_caption": caption}


def test_questions_keep_resolvable_evidence_and_report_the_rest() -> None:
    [conversation] = load_locomo(FIXTURE)

    first, *_, malformed, hand_made = conversation.questions
    assert first == LocomoQuestion(
        question="When did Caroline join the pottery class?",
        answer="7 May 2023",
        category=2,
        evidence=["D1:3"],
        unresolved_evidence=[],
    )
    # "D8:6; D9:17" parses, but those turns are not in this two-session slice.
    assert (malformed.evidence, malformed.unresolved_evidence) == ([], ["D8:6", "D9:17"])
    assert hand_made.answer == "2023"
    assert hand_made.category == 4
    assert hand_made.evidence == ["D1:3", "D1:4", "D1:5", "D2:2", "D1:1"]
    assert hand_made.unresolved_evidence == ["see", "D30:5"]


def test_adversarial_question_has_an_empty_answer_and_its_adversarial_answer() -> None:
    [conversation] = load_locomo(FIXTURE)

    [adversarial] = [q for q in conversation.questions if q.category == 5]
    assert adversarial.answer == ""
    assert adversarial.adversarial_answer == "to train every week"


def test_dia_locations_map_each_dia_id_to_its_session_and_position() -> None:
    [conversation] = load_locomo(FIXTURE)

    locations = conversation.dia_locations()

    assert locations["D1:5"] == ("26:session_1", 4)
    assert locations["D2:1"] == ("26:session_2", 0)
    assert len(locations) == 8


def test_single_file_form_uses_sample_ids(tmp_path: Path) -> None:
    data = fixture_data()
    qa = data.pop("qa")
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "conv-26", "conversation": data, "qa": qa}]))

    [conversation] = load_locomo(path)

    assert conversation.sample_id == "conv-26"
    assert conversation.sessions[0].session_id == "conv-26:session_1"
    assert len(conversation.questions) == len(qa)


def test_folder_loads_every_file_in_numeric_order(tmp_path: Path) -> None:
    data = fixture_data()
    for stem in ("10", "9", "notes"):
        (tmp_path / f"{stem}.json").write_text(json.dumps(data))

    assert [c.sample_id for c in load_locomo(tmp_path)] == ["9", "10", "notes"]


def test_sessions_sort_numerically_and_empty_sessions_are_skipped(tmp_path: Path) -> None:
    turn = {"speaker": "A", "dia_id": "D1:1", "text": "hi"}
    data = {"speaker_a": "A", "speaker_b": "B", "session_10": [turn], "session_2": [turn]}
    data |= {"session_1": [turn], "session_3": [], "sample_id": "x", "qa": []}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))

    [conversation] = load_locomo(path)

    assert [s.session_id for s in conversation.sessions] == [
        "x:session_1",
        "x:session_2",
        "x:session_10",
    ]
    assert conversation.sessions[0].turns[0].timestamp is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"speaker_a": "A"}, "has no session_N turn lists"),
        ({"speaker_a": "A", "session_1": "hi"}, "'session_1' must be a list of turns"),
        ({"speaker_a": "A", "session_1": [{"text": "hi"}]}, "needs string 'text', 'speaker'"),
        (
            {
                "speaker_a": "A",
                "session_1": [{"text": "h", "speaker": "A", "dia_id": "D1:1"}],
                "qa": [{"question": "q?", "answer": "a"}],
            },
            "'category' must be an integer",
        ),
        ({"title": "not locomo"}, "does not look like LoCoMo data"),
        ([{"sample_id": "conv-1"}], "sample conv-1 has no 'conversation' object"),
    ],
)
def test_malformed_locomo_files_raise_input_errors(
    tmp_path: Path, data: object, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))

    with pytest.raises(InputError, match=message):
        load_locomo(path)


def test_empty_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"holds no \.json files"):
        load_locomo(tmp_path)
