"""QMSum meetings: the transcript as one session, gold = the turns of a specific query's
inclusive spans, split folders kept as each meeting's split."""

from pathlib import Path

import pytest

from smartsearch_mcp.importers.qmsum import load_qmsum, meeting_domain, parse_span
from smartsearch_mcp.types import InputError

FOLDER = Path(__file__).parents[1] / "fixtures" / "qmsum"


def test_split_folders_load_in_order_and_each_meeting_keeps_its_split() -> None:
    meetings = load_qmsum(FOLDER)

    assert [(m.name, m.split, m.domain) for m in meetings] == [
        ("TS1001a", "train", "product"),
        ("Bro001", "val", "academic"),
        ("education_4", "val", "committee"),
    ]
    assert [m.name for m in load_qmsum(FOLDER / "val")] == ["Bro001", "education_4"]


def test_turns_with_text_are_stored_under_their_transcript_index() -> None:
    meeting = load_qmsum(FOLDER / "train" / "TS1001a.json")[0]

    assert [t.metadata["index"] for t in meeting.session.turns] == [0, 1, 3, 4, 5, 6, 7]
    assert meeting.empty_turns == 1
    assert meeting.session.turns[0].speaker == "Project Manager"
    assert meeting.general_queries == 1


def test_gold_is_every_turn_of_the_inclusive_spans_that_has_text() -> None:
    colour, battery = load_qmsum(FOLDER / "train" / "TS1001a.json")[0].queries

    assert colour.spans == [(1, 3), (6, 6)]
    assert colour.gold == [1, 3, 6]  # turn 2 is empty
    assert colour.empty_gold == 1
    assert colour.unresolved == []
    assert battery.gold == [4, 5]
    assert battery.unresolved == ["['5', '40']"]  # past the end of the transcript


def test_spans_are_read_tolerantly() -> None:
    assert parse_span(["3", "7"], 10) == (3, 7)
    assert parse_span([" 4 ", 4], 10) == (4, 4)
    assert parse_span(["7", "3"], 10) is None
    assert parse_span(["0", "10"], 10) is None
    assert parse_span(["a", "3"], 10) is None
    assert parse_span("3-7", 10) is None


def test_meeting_sources_come_from_the_file_names() -> None:
    assert [meeting_domain(n) for n in ("ES2004a", "IS1000b", "TS3003c")] == ["product"] * 3
    assert [meeting_domain(n) for n in ("covid_1", "education_12")] == ["committee"] * 2
    assert [meeting_domain(n) for n in ("Bed003", "Bmr009", "Bro017", "ISx")] == ["academic"] * 4


def test_a_file_that_is_not_qmsum_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"transcript": []}')

    with pytest.raises(InputError, match="QMSum"):
        load_qmsum(tmp_path / "x.json")
