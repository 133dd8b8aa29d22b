import json
from pathlib import Path

import pytest

from smartsearch_mcp.importers.longmemeval import load_longmemeval, parse_list_field
from smartsearch_mcp.types import InputError, TurnInput

FIXTURE = Path(__file__).parents[1] / "fixtures" / "longmemeval" / "longmemeval_s_slice.json"
LIST_FIELDS = ("answer_session_ids", "haystack_dates", "haystack_session_ids", "haystack_sessions")


def fixture_records() -> list[dict]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_record_fields_are_read() -> None:
    [record] = load_longmemeval(FIXTURE)

    assert record.question_id == "e47becba"
    assert record.question_type == "single-session-user"
    assert record.question == "What degree did I graduate with?"
    assert record.question_date == "2023/05/30 (Tue) 23:40"
    assert record.answer == "Business Administration"
    assert record.answer_session_ids == ["answer_280352e9"]
    assert not record.is_abstention


def test_each_haystack_session_becomes_a_dated_session() -> None:
    [record] = load_longmemeval(FIXTURE)

    assert [(s.session_id, len(s.turns)) for s in record.sessions] == [
        ("sharegpt_yywfIrx_0", 2),
        ("85a1be56_1", 4),
        ("answer_280352e9", 12),
    ]
    first = record.sessions[0].turns[0]
    assert (first.role, first.speaker, first.timestamp, first.metadata) == (
        "user",
        "user",
        "2023/05/20 (Sat) 02:21",
        None,
    )


def test_gold_turns_are_the_turns_marked_has_answer() -> None:
    [record] = load_longmemeval(FIXTURE)

    assert record.gold_turns == [("answer_280352e9", 4), ("answer_280352e9", 5)]
    answer_session = record.sessions[2]
    assert answer_session.turns[4].metadata == {"has_answer": True}
    assert answer_session.turns[3].metadata is None  # has_answer: false is not kept
    assert "Business Administration" in answer_session.turns[4].text


def test_stringified_list_fields_read_the_same_as_real_lists(tmp_path: Path) -> None:
    records = fixture_records()
    for field in LIST_FIELDS:
        records[0][field] = repr(records[0][field])
    path = tmp_path / "stringified.json"
    path.write_text(json.dumps(records))

    assert load_longmemeval(path) == load_longmemeval(FIXTURE)


def test_a_single_record_object_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(fixture_records()[0]))

    assert load_longmemeval(path) == load_longmemeval(FIXTURE)


def test_empty_turns_are_skipped_and_gold_indexes_follow_the_kept_turns(tmp_path: Path) -> None:
    record = fixture_records()[0] | {"question_id": "x_abs"}
    record["haystack_sessions"][2].insert(0, {"role": "user", "content": "  "})
    path = tmp_path / "empty-turn.json"
    path.write_text(json.dumps([record]))

    [loaded] = load_longmemeval(path)

    assert loaded.gold_turns == [("answer_280352e9", 4), ("answer_280352e9", 5)]
    assert loaded.is_abstention


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["a"], ["a"]),
        ("['answer_280352e9']", ["answer_280352e9"]),
        ('["a", "b"]', ["a", "b"]),
        (
            "[[{'role': 'user', 'content': 'hi', 'has_answer': True}]]",
            [[{"role": "user", "content": "hi", "has_answer": True}]],
        ),
        ("[]", []),
    ],
)
def test_parse_list_field_accepts_lists_and_list_literals(value: object, expected: list) -> None:
    assert parse_list_field(value, "field") == expected


@pytest.mark.parametrize("value", ["answer_1", "{'a': 1}", "__import__('os')", 5, None])
def test_parse_list_field_rejects_anything_else(value: object) -> None:
    with pytest.raises(InputError, match="field must be a list or a string holding a list"):
        parse_list_field(value, "field")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"haystack_session_ids": "not a list"}, "'haystack_session_ids' must be a list"),
        ({"haystack_dates": ["2023/05/20 (Sat) 02:21"]}, "must have equal lengths"),
        ({"question_id": None}, "needs string 'question_id' and 'question'"),
        ({"haystack_sessions": [[], [], [{"role": "user"}]]}, "turn 0: needs a string 'content'"),
        ({"haystack_sessions": [[], [], "x"]}, "must be a list of turns"),
    ],
)
def test_malformed_records_raise_input_errors(tmp_path: Path, change: dict, message: str) -> None:
    record = fixture_records()[0] | change
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]))

    with pytest.raises(InputError, match=message):
        load_longmemeval(path)


def test_missing_field_is_named(tmp_path: Path) -> None:
    record = fixture_records()[0]
    del record["answer_session_ids"]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([record]))

    with pytest.raises(InputError, match="'answer_session_ids' is missing"):
        load_longmemeval(path)


def test_turn_input_shape_for_an_assistant_turn() -> None:
    [record] = load_longmemeval(FIXTURE)

    turn = record.sessions[0].turns[1]
    assert isinstance(turn, TurnInput)
    assert (turn.role, turn.speaker) == ("assistant", "assistant")
