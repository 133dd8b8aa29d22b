"""FriendsQA scenes: utterances under the literal "utterances:" key as one session, gold =
the set of utterances the answers point at."""

import json
from pathlib import Path

import pytest

from smartsearch_mcp.importers.friendsqa import load_friendsqa, question_word
from smartsearch_mcp.types import InputError

FILE = Path(__file__).parents[1] / "fixtures" / "friendsqa" / "friendsqa_fixture.json"


def test_scenes_load_in_file_order_with_their_utterances() -> None:
    scenes = load_friendsqa(FILE)

    assert [s.title for s in scenes] == ["s01_e02_c01", "s01_e01_c03", "s01_e01_c01"]
    laundromat = scenes[0].session
    assert laundromat.session_id == "friends-s01_e02_c01"
    assert [t.metadata["uid"] for t in laundromat.turns] == [0, 1, 2, 3]
    assert [t.speaker for t in laundromat.turns] == [
        None,  # a stage direction (#NOTE#)
        "Dana Reyes",
        "Tom Ikeda",
        "Dana Reyes and Tom Ikeda",
    ]


def test_gold_is_every_utterance_an_answer_points_at_once_each() -> None:
    pink, who = load_friendsqa(FILE)[0].questions

    assert pink.gold == [1, 2]
    assert pink.answers == ["my red sock", "That sock", "red sock"]
    assert who.gold == [1]  # a speaker's name answers from their line
    assert who.unresolved == ["7"]  # no utterance 7 in the scene


def test_the_question_word_comes_from_the_id_else_the_question() -> None:
    assert question_word("s01_e02_c01_What", "s01_e02_c01", "What turned pink ?") == "what"
    assert question_word("s01_e02_c01_Who_Paraphrased", "s01_e02_c01", "x") == "who"
    assert question_word("q17", "s01_e02_c01", "Where is the goat ?") == "where"


def test_the_key_without_its_colon_is_accepted_too(tmp_path: Path) -> None:
    data = json.loads(FILE.read_text())
    paragraph = data["data"][2]["paragraphs"][0]
    paragraph["utterances"] = paragraph.pop("utterances:")
    (tmp_path / "plain.json").write_text(json.dumps(data))

    assert load_friendsqa(tmp_path / "plain.json")[2] == load_friendsqa(FILE)[2]


def test_a_file_that_is_not_friendsqa_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"data": [{"title": "s", "paragraphs": [{"qas": []}]}]}')

    with pytest.raises(InputError, match="utterances"):
        load_friendsqa(tmp_path / "x.json")
