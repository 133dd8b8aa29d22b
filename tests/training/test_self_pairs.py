"""training/self_pairs.py: ranking rows made from the conversations themselves (a question and
the reply to it; a sentence taken out of its turn), with hard negatives from the same
conversation."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from training.self_pairs import Line, conversation_rows, fold_conversations

FIXTURES = Path(__file__).parents[1] / "fixtures"

CHAT = [
    Line("Ana", "Did the plumber ever fix the leaking pipe under the sink?"),
    Line("Ben", "He replaced the whole trap on Monday, the sink has been dry since."),
    Line("Ana", "Great. The kitchen tiles still need grout though."),
    Line("Ben", "The plumber said the boiler pipe is old too."),
    Line(
        "Ana",
        "We bought tickets for the jazz night at the harbour hall on Friday evening. "
        "Marta is driving us there in her van. Dinner is at the noodle bar after.",
    ),
    Line("Ben", "Sounds lovely, count me in for the noodles."),
]


def test_a_question_and_the_reply_by_someone_else_make_an_asked_row() -> None:
    rows = conversation_rows(CHAT, random.Random(3), "chat")
    asked = [row for row in rows if row.kind == "asked"]
    assert [row.query for row in asked] == [CHAT[0].text]
    (row,) = asked
    assert row.positive == "Ben: " + CHAT[1].text
    assert row.dataset == "chat" and len(row.negatives) == 3
    # neither the asking turn nor the reply is a negative; the turn sharing the most words
    # with the question ("plumber", "pipe") is the first
    assert "Ana: " + CHAT[0].text not in row.negatives
    assert row.positive not in row.negatives
    assert row.negatives[0] == "Ben: " + CHAT[3].text


def test_a_question_answered_by_the_same_speaker_makes_no_asked_row() -> None:
    lines = [CHAT[0], Line("Ana", "I keep hearing it drip at night."), *CHAT[2:]]
    rows = conversation_rows(lines, random.Random(3), "chat")
    assert not [row for row in rows if row.kind == "asked"]


def test_a_sentence_taken_out_of_a_long_turn_is_the_query_and_the_rest_the_positive() -> None:
    rows = conversation_rows(CHAT, random.Random(3), "chat")
    cloze = [row for row in rows if row.kind == "cloze"]
    assert len(cloze) == 1  # only turn 5 has several sentences and 16 words
    (row,) = cloze
    sentences = [s.strip() + "." for s in CHAT[4].text.split(".") if s.strip()]
    assert row.query in sentences
    assert row.positive.startswith("Ana: ") and row.query not in row.positive
    assert all(s in row.positive for s in sentences if s != row.query)
    assert not any(row.query in negative for negative in row.negatives)


def test_a_conversation_too_short_for_the_negatives_gives_no_rows() -> None:
    assert conversation_rows(CHAT[:2], random.Random(3), "chat") == []


def test_only_the_conversations_of_the_fold_are_read() -> None:
    # the LoCoMo slice holds one conversation, the first in sample order: half A
    found = list(fold_conversations(FIXTURES, "A", ["locomo"]))
    assert [name for name, _ in found] == ["locomo"]
    assert all(line.text for line in found[0][1])
    assert list(fold_conversations(FIXTURES, "B", ["locomo"])) == []


def test_the_trainers_rows_carry_as_many_negatives_as_the_run_asks_for() -> None:
    from training.train_bi_encoder import self_supervised_rows

    for negatives in (2, 4):
        args = argparse.Namespace(
            data=str(FIXTURES), fold="A", self_supervised=["locomo"], seed=13,
            negatives=negatives, self_rows=2,
        )  # fmt: skip
        rows = self_supervised_rows(args)
        assert len(rows) == 2
        assert {f"negative_{i}" for i in range(1, negatives + 1)} < set(rows[0])
        assert f"negative_{negatives + 1}" not in rows[0]
