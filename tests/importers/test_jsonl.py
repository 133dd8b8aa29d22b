import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.importers.jsonl import parse_jsonl_lines, read_jsonl
from smartsearch_mcp.types import InputError, SessionInput, TurnInput

FIXTURES = Path(__file__).parents[1] / "fixtures"


def write_lines(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "turns.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_export_lines_group_by_namespace_and_session_in_first_appearance_order() -> None:
    sessions = list(read_jsonl(FIXTURES / "exports" / "turns.jsonl"))

    assert [(namespace, s.session_id, len(s.turns)) for namespace, s in sessions] == [
        ("work", "standup-2024-03-15", 3),
        ("home", "groceries", 1),
        (None, sessions[2][1].session_id, 1),
    ]
    assert (sessions[2][1].session_id or "").startswith("jsonl-")


def test_export_line_becomes_a_turn_with_the_raw_timestamp_preferred() -> None:
    (_, standup), *_ = read_jsonl(FIXTURES / "exports" / "turns.jsonl")

    assert standup.turns[0] == TurnInput(
        text="The release moves to Friday.",
        speaker="Ana",
        role="user",
        timestamp="March 15, 2024 09:30",
        metadata={"channel": "#team"},
    )
    assert standup.turns[1].timestamp == "2024-03-15T09:31:00"
    assert [turn.text for turn in standup.turns] == [
        "The release moves to Friday.",
        "Noted; I'll tell QA.",
        "Thanks.",
    ]


def test_numeric_timestamp_is_kept_as_its_number_written_as_a_string() -> None:
    *_, (_, loose) = read_jsonl(FIXTURES / "exports" / "turns.jsonl")

    assert loose == SessionInput(
        session_id=loose.session_id,
        turns=[TurnInput(text="A note with no session.", timestamp="1710495000")],
    )


def test_lines_without_session_id_share_one_session_per_file(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path, '{"text": "one"}', '{"text": "two", "session_id": "s"}', '{"text": "three"}'
    )

    sessions = [session for _, session in read_jsonl(path)]

    assert [(s.session_id, [t.text for t in s.turns]) for s in sessions] == [
        (sessions[0].session_id, ["one", "three"]),
        ("s", ["two"]),
    ]


def test_lines_without_session_id_get_the_same_session_id_on_every_read(tmp_path: Path) -> None:
    first = write_lines(tmp_path, '{"text": "one"}', '{"text": "three"}')
    [(_, before)] = read_jsonl(first)
    first.write_text(first.read_text() + '{"text": "four"}\n')  # lines appended later
    [(_, after)] = read_jsonl(first)
    other = tmp_path / "other.jsonl"
    other.write_text('{"text": "something else"}\n')
    [(_, elsewhere)] = read_jsonl(other)

    assert before.session_id is not None and before.session_id.startswith("jsonl-")
    assert after.session_id == before.session_id
    assert elsewhere.session_id != before.session_id


def test_text_with_unicode_line_separators_stays_on_its_line(tmp_path: Path) -> None:
    text = "first\u2028second\u2029third\x85"
    path = write_lines(tmp_path, json.dumps({"text": text}, ensure_ascii=False))

    [(_, session)] = read_jsonl(path)

    assert session.turns[0].text == text


def test_blank_lines_and_a_byte_order_mark_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_text('\ufeff{"text": "hi"}\n\n   \n{"text": "there"}\r\n', encoding="utf-8")

    [(_, session)] = read_jsonl(path)

    assert [turn.text for turn in session.turns] == ["hi", "there"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not valid JSON"),
        ('["text"]', "line 2: expected a JSON object with a 'text' key, got a list"),
        ('{"speaker": "Ana"}', "line 2: 'text' is missing"),
        ('{"text": 5}', "line 2: 'text' must be a string, got a number"),
        ('{"text": "  "}', "line 2: 'text' is empty"),
        ('{"text": "x", "role": "bot"}', "line 2: 'role' must be one of user, assistant, other"),
        ('{"text": "x", "session_id": 7}', "line 2: 'session_id' must be a string, got a number"),
        ('{"text": "x", "namespace": ""}', "line 2: 'namespace' is empty"),
        ('{"text": "x", "metadata": []}', "line 2: 'metadata' must be an object, got a list"),
        ('{"text": "x", "timestamp": true}', "line 2: 'timestamp' must be a string or a number"),
        (
            '{"text": "x", "timestamp": "next tuesday"}',
            "line 2: 'timestamp': cannot read timestamp",
        ),
        ('{"text": "x", "timestamp_raw": "soon"}', "line 2: 'timestamp_raw': cannot read"),
    ],
)
def test_a_bad_line_raises_naming_the_line_and_the_problem(
    tmp_path: Path, line: str, message: str
) -> None:
    path = write_lines(tmp_path, '{"text": "fine"}', line)

    with pytest.raises(InputError, match=message) as raised:
        read_jsonl(path)

    assert str(path) in str(raised.value)


def test_unknown_keys_are_ignored() -> None:
    [(_, session)] = parse_jsonl_lines(['{"text": "x", "content_hash": "abc", "position": 4}'])

    assert session.turns == [TurnInput(text="x")]


def test_missing_file_raises_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        read_jsonl(tmp_path / "nope.jsonl")


def test_non_utf8_file_raises_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"text": "café"}\n'.encode("latin-1"))

    with pytest.raises(InputError, match="not UTF-8"):
        read_jsonl(path)


texts = st.text(min_size=1).filter(str.strip)
names = st.none() | st.text(min_size=1, max_size=20)
turn_inputs = st.builds(
    TurnInput,
    text=texts,
    speaker=names,
    role=st.none() | st.sampled_from(["user", "assistant", "other"]),
    timestamp=st.none() | st.sampled_from(["2024-03-15", "8 May, 2023", "1710000010.5"]),
    metadata=st.none() | st.dictionaries(st.text(max_size=5), st.integers() | st.text()),
)


@given(
    st.lists(
        st.tuples(names, st.text(min_size=1, max_size=8), st.lists(turn_inputs, min_size=1)),
        max_size=4,
        unique_by=lambda session: (session[0], session[1]),
    )
)
def test_export_shaped_lines_round_trip_to_the_same_sessions(
    sessions: list[tuple[str | None, str, list[TurnInput]]],
) -> None:
    lines = [
        json.dumps(
            {
                "id": 1,
                "namespace": namespace,
                "session_id": session_id,
                "position": position,
                "speaker": turn.speaker,
                "role": turn.role,
                "text": turn.text,
                "timestamp": "2024-01-01T00:00:00",
                "timestamp_raw": turn.timestamp,
                "created_at": "2024-06-01T12:00:00Z",
                "metadata": turn.metadata,
            },
            ensure_ascii=False,
        )
        for namespace, session_id, turns in sessions
        for position, turn in enumerate(turns)
    ]

    imported = parse_jsonl_lines("\n".join(lines).split("\n"))

    assert imported == [
        (namespace, SessionInput(session_id, [_with_time(t) for t in turns]))
        for namespace, session_id, turns in sessions
    ]


def _with_time(turn: TurnInput) -> TurnInput:
    """Export writes the normalized time; import prefers the raw one when there is one."""
    timestamp = turn.timestamp if turn.timestamp is not None else "2024-01-01T00:00:00"
    return TurnInput(turn.text, turn.speaker, turn.role, timestamp, turn.metadata)
