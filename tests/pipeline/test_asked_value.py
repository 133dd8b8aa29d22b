"""The kind of value asked for first: of the best few passages, those giving a value of the
kind the question asks for ("when": a day or time; "how many": a number) go first."""

from __future__ import annotations

import pytest
from factories import make_passage

from smartsearch_mcp.config import RankConfig
from smartsearch_mcp.pipeline.adjust import Context
from smartsearch_mcp.pipeline.adjust.asked_value import (
    ASKED_VALUE_WINDOW,
    asked_value,
    prefer_asked_values,
)
from smartsearch_mcp.types import Candidate, Scored

STAMP = "2026-05-02T10:00:00"


def _ranking(texts: list[str]) -> list[Scored]:
    scores = [1.0 - 0.1 * i for i in range(len(texts))]
    return [
        Scored(
            candidate=Candidate(make_passage(i + 1, text, timestamp=STAMP), 0.0, ()),
            score=score,
            confidence=0.9 - 0.2 * i,
        )
        for i, (text, score) in enumerate(zip(texts, scores, strict=True))
    ]


def _texts(items: list[Scored]) -> list[str]:
    return [item.candidate.passage.text for item in items]


RANKING = [
    "the recital hall is lovely, Nora loved the piano there",
    "Nora's piano teacher says she is ready",
    "the recital is on May 14 at 6pm",
    "ticket prices went up to $15",
]


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("When is Nora's recital?", "the recital is on May 14 at 6pm"),
        ("What time does the recital start?", "the recital is on May 14 at 6pm"),
        ("Where is the recital?", RANKING[0]),  # asks for no value: unchanged
    ],
)
def test_a_passage_giving_the_value_asked_for_goes_first(question: str, first: str) -> None:
    ranked = asked_value(_ranking(RANKING), Context(RankConfig(), query=question))
    assert _texts(ranked)[0] == first
    assert sorted(_texts(ranked)) == sorted(RANKING)
    assert [item.score for item in ranked] == [1.0, 0.9, 0.8, 0.7]  # places and scores traded
    if first != RANKING[0]:  # the others keep their order, each its confidence
        assert _texts(ranked)[1:3] == RANKING[:2]
        confidence = {item.candidate.passage.text: item.confidence for item in ranked}
        assert confidence[first] == pytest.approx(0.5)


def test_only_the_best_few_trade_places() -> None:
    # the only passage giving an amount is below the window: the ranking stands
    assert ASKED_VALUE_WINDOW == 3
    ranking = _ranking(RANKING)
    assert prefer_asked_values(ranking, {"amount"}) == ranking
    # ...and when every passage of the window gives one, nothing moves either
    dated = _ranking(["May 3 was fine", "on May 9 we met", "May 14 then", "no date"])
    assert prefer_asked_values(dated, {"date"}) == dated


def test_a_number_asked_for_moves_nothing() -> None:
    # "how many" is more often counted over a conversation than said in one turn
    ranking = _ranking(["karaoke at the neon bar", "booked the room for 4 people at 8pm"])
    ranked = asked_value(ranking, Context(RankConfig(), query="how many people are coming?"))
    assert ranked == ranking
    # ...a time asked for with it moves the passage giving one
    ranked = asked_value(ranking, Context(RankConfig(), query="what time, and how many?"))
    assert _texts(ranked) == ["booked the room for 4 people at 8pm", "karaoke at the neon bar"]


def test_a_burst_counts_as_one_passage_and_moves_whole() -> None:
    # Bo's burst fills the best three; Ann's, below it, gives the time asked for
    def msg(turn_id: int, speaker: str, text: str, at: str, score: float) -> Scored:
        passage = make_passage(
            turn_id, text, speaker=speaker, role="other", timestamp=f"2026-05-02T{at}"
        )
        return Scored(Candidate(passage, 0.0, ()), score, confidence=score)

    ranking = [
        msg(1, "Bo", "karaoke at the neon bar then?", "10:00:20", 0.9),
        msg(2, "Bo", "same place as before", "10:00:30", 0.9),
        msg(3, "Bo", "lol", "10:00:35", 0.9),
        msg(4, "Ann", "ok", "10:02:00", 0.8),
        msg(5, "Ann", "booked the back room from 8pm", "10:02:10", 0.8),
        msg(6, "Cy", "nice", "10:05:00", 0.5),
    ]
    question = "what time is the karaoke booking?"

    def order(burst_seconds: int) -> list[int]:
        context = Context(RankConfig(), burst_seconds, query=question)
        ranked = asked_value(list(ranking), context)
        assert [item.score for item in ranked] == [0.9, 0.9, 0.9, 0.8, 0.8, 0.5]
        return [item.candidate.passage.turn.id for item in ranked]

    assert order(60) == [4, 5, 1, 2, 3, 6]  # Ann's burst first, whole and in its order
    assert order(0) == [1, 2, 3, 4, 5, 6]  # message by message the time is 5th: no move
