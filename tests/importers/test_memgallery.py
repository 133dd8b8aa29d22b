"""Mem-Gallery conversations: a round is the user turn and the reply, both under its round
id, captions appended to the user message; clue ids are the gold, empty for abstention."""

from pathlib import Path

import pytest

from smartsearch_mcp.importers.memgallery import load_memgallery
from smartsearch_mcp.types import InputError

FOLDER = Path(__file__).parents[1] / "fixtures" / "memgallery"


def test_conversations_load_in_file_name_order() -> None:
    names = [c.name for c in load_memgallery(FOLDER)]

    assert names == ["Birdwatching_City_Parks", "Community_Garden_Plots", "Pottery_Weekend_Studio"]


def test_a_round_is_two_turns_under_its_round_id() -> None:
    conversation = load_memgallery(FOLDER / "Pottery_Weekend_Studio.json")[0]
    first, second = conversation.sessions

    assert first.session_id == "D1"
    assert [(t.metadata["round"], t.role) for t in first.turns] == [
        ("D1:1", "user"),
        ("D1:1", "assistant"),
        ("D1:2", "user"),
        ("D1:2", "assistant"),
    ]
    assert [t.speaker for t in first.turns[:2]] == ["Mira", "assistant"]
    assert {t.timestamp for t in second.turns} == {"2024-04-20"}


def test_image_captions_are_appended_to_the_user_message() -> None:
    conversation = load_memgallery(FOLDER / "Pottery_Weekend_Studio.json")[0]
    user, reply = conversation.sessions[1].turns[2:]

    assert user.text == (
        "Which glaze goes well with speckled clay? "
        "[image: Three glaze test tiles in blue, cream and green.] "
        "[image: A speckled mug with a satin finish.]"
    )
    assert "[image:" not in reply.text


def test_clue_ids_are_the_gold_once_each_and_unknown_ids_are_unresolved() -> None:
    conversation = load_memgallery(FOLDER / "Pottery_Weekend_Studio.json")[0]
    fr, vs, mr, _ = conversation.questions

    assert (fr.point, fr.clue) == ("FR", ["D1:1"])
    assert (vs.answer, vs.clue) == ("D2:IMG_001", ["D2:2"])
    assert mr.clue == ["D2:1", "D1:2"]
    assert mr.unresolved == ["D7:3"]


def test_abstention_has_an_empty_clue_and_no_gold() -> None:
    conversation = load_memgallery(FOLDER / "Pottery_Weekend_Studio.json")[0]
    abstention = conversation.questions[3]

    assert (abstention.point, abstention.answer) == ("AR", "Not mentioned.")
    assert abstention.clue == [] and abstention.unresolved == []


def test_a_file_that_is_not_memgallery_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"dialogues": []}')

    with pytest.raises(InputError, match="Mem-Gallery"):
        load_memgallery(tmp_path / "x.json")
