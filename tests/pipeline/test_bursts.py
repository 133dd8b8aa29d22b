"""Bursts: consecutive messages of one speaker within a short time read as one thought."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

import pytest
from given_models import GivenModels
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.config import Config, RankConfig
from smartsearch_mcp.pipeline.adjust import Context
from smartsearch_mcp.pipeline.adjust.bursts import burst_credit
from smartsearch_mcp.pipeline.bursts import (
    burst_groups,
    burst_groups_grown,
    burst_texts,
    credit_bursts,
)
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Candidate, Passage, Scope, Scored, Turn, TurnInput

SCOPE = Scope(("ns",))


def _turn(position: int, speaker: str, text: str, at: str, session: str = "s1") -> Turn:
    return Turn(
        id=position + 1,
        namespace="ns",
        session_id=session,
        position=position,
        speaker=speaker,
        role="other",
        text=text,
        timestamp=at,
        timestamp_raw=at,
        metadata={},
        created_at=at,
    )


def _passages(turns: list[Turn]) -> list[Passage]:
    return [Passage(turn=t, start=0, end=len(t.text)) for t in turns]


CHAT = [
    _turn(0, "Ann", "omg", "2026-03-02T18:00:05"),
    _turn(1, "Ann", "the flat is ours", "2026-03-02T18:00:09"),
    _turn(2, "Ann", "keys from the agent on thursday", "2026-03-02T18:00:20"),
    _turn(3, "Bo", "no way!! congrats", "2026-03-02T18:01:00"),
    _turn(4, "Bo", "drinks friday?", "2026-03-02T18:01:04"),
    _turn(5, "Bo", "or saturday", "2026-03-02T19:30:00"),  # an hour and a half later
]


def test_consecutive_messages_of_one_speaker_within_the_gap_form_one_burst() -> None:
    groups = burst_groups(_passages(CHAT), seconds=300, max_words=160)
    assert groups[0] == groups[1] == groups[2]
    assert groups[3] == groups[4] != groups[2]  # another speaker starts another burst
    assert groups[5] not in groups[:5]  # too long after the one before


def test_an_assistants_messages_in_a_row_are_statements_of_their_own_not_a_burst() -> None:
    # A coding agent's text messages between its tool calls, seconds apart
    replies = [
        dataclasses.replace(turn, speaker="assistant", role="assistant") for turn in CHAT[:3]
    ]
    assert burst_groups(_passages(replies), seconds=300, max_words=160) == [0, 1, 2]


def test_without_a_gap_setting_every_message_stands_alone() -> None:
    assert burst_groups(_passages(CHAT), seconds=0, max_words=160) == list(range(6))


def test_a_burst_ends_at_the_end_of_its_session_and_at_the_word_limit() -> None:
    other = _turn(1, "Ann", "the flat is ours", "2026-03-02T18:00:09", session="s2")
    groups = burst_groups(_passages([CHAT[0], other]), seconds=300, max_words=160)
    assert groups[0] != groups[1]
    capped = burst_groups(_passages(CHAT[:3]), seconds=300, max_words=5)
    assert capped[0] == capped[1] != capped[2]  # 1 + 4 words fit, 6 more do not


def _scored(passages: list[Passage], scores: list[float]) -> list[Scored]:
    items = [
        Scored(candidate=Candidate(passage=p, lexical_score=s, sources=()), score=s)
        for p, s in zip(passages, scores, strict=True)
    ]
    return sorted(items, key=lambda item: -item.score)


def test_a_burst_is_ranked_together_just_below_its_best_message_in_their_own_order() -> None:
    passages = _passages(CHAT)
    ranked = credit_bursts(_scored(passages, [0.1, 0.9, 0.2, 0.5, 0.4, 0.3]), 1.0, 300)
    # the burst's other messages follow its best by how well each matched, not by position
    assert [item.candidate.passage.turn.position for item in ranked] == [1, 2, 0, 3, 4, 5]
    unchanged = credit_bursts(_scored(passages, [0.1, 0.9, 0.2, 0.5, 0.4, 0.3]), 0.0, 300)
    assert [item.candidate.passage.turn.position for item in unchanged] == [1, 3, 4, 5, 2, 0]


def test_a_burst_message_lifted_by_its_best_is_as_certain_as_it() -> None:
    # truncation stops at the first passage well below the best's confidence: a lifted "omg"
    # that kept its own would cut the recall short right under "the flat is ours"
    items = [
        dataclasses.replace(item, confidence=sure)
        for item, sure in zip(
            _scored(_passages(CHAT), [0.1, 0.9, 0.2, 0.5, 0.4, 0.3]),
            [0.8, 0.4, 0.3, 0.2, 0.05, 0.0],  # positions 1, 3, 4, 5, 2, 0
            strict=True,
        )
    ]
    ranked = credit_bursts(items, 0.5, 300)
    sure = {item.candidate.passage.turn.position: item.confidence for item in ranked}
    assert sure == {1: 0.8, 0: 0.4, 2: 0.4, 3: 0.4, 4: 0.3, 5: 0.2}
    assert [item.candidate.passage.turn.position for item in ranked] == [1, 3, 2, 0, 4, 5]


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("When do they get the keys?", 2),  # asks a day: "on thursday" leads
        ("Whose flat is it?", 1),  # asks none: the best-matched message leads
        ("What is the flat like?", 1),
    ],
)
def test_a_burst_is_led_by_its_message_giving_the_kind_of_value_asked_for(
    question: str, first: int
) -> None:
    scored = _scored(_passages(CHAT), [0.3, 0.9, 0.2, 0.5, 0.4, 0.1])
    ranked = burst_credit(scored, Context(RankConfig(burst_credit=1.0), 300, query=question))
    order = [item.candidate.passage.turn.position for item in ranked]
    if first == 2:  # and "drinks friday?" leads "no way!! congrats"
        assert order == [2, 1, 0, 4, 3, 5]
    else:
        assert order == [1, 0, 2, 3, 4, 5]
    assert ranked[0].score == 0.9  # the burst keeps its best message's score


@pytest.mark.anyio
async def test_a_question_matching_words_spread_over_a_burst_recalls_the_whole_burst(
    tmp_path,
) -> None:
    store = await SQLiteStore.open(tmp_path / "m.db")
    try:
        await store.remember(
            "ns",
            "s1",
            [
                TurnInput(t.text, t.speaker, timestamp=t.timestamp)
                for t in [*CHAT, _turn(6, "Ann", "lost the keys to the old flat", "2026-03-09")]
            ],
        )

        async def first_three(burst_seconds: int) -> list[str]:
            config = Config().with_overrides(
                nlp={"spacy_models": []},
                retrieval={"dense": False},
                passages={"burst_seconds": burst_seconds},
                rank={"scorers": ["lexical"], "adjust": ["burst_credit"]},
            )
            pipeline = RecallPipeline(store, config, GivenModels())  # type: ignore[arg-type]
            ranking = await pipeline.rank("When does Ann get the keys to the flat?", SCOPE)
            return [item.candidate.passage.text for item in ranking.scored[:3]]

        together = await first_three(300)
        assert set(together) == {"omg", "the flat is ours", "keys from the agent on thursday"}
        alone = await first_three(0)  # each message alone matches less than the distractor
        assert alone[0] == "lost the keys to the old flat"
    finally:
        await store.close()


MESSAGES = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3"]),
        st.sampled_from(["Ann", "Bo", ""]),
        st.integers(0, 90),  # seconds after the message before
        st.integers(1, 6),  # words
        st.booleans(),  # split into two passages
    ),
    max_size=30,
)


@given(MESSAGES, st.integers(0, 30))
def test_bursts_of_a_grown_corpus_are_those_of_the_corpus_grouped_whole(
    messages: list[tuple[str, str, int, int, bool]], cut: int
) -> None:
    passages: list[Passage] = []
    positions: dict[str, int] = {}
    moment = datetime(2026, 3, 2, 18, 0, 0)
    for session, speaker, gap, words, split in messages:
        moment += timedelta(seconds=gap)
        position = positions.get(session, 0)
        positions[session] = position + 1
        turn = dataclasses.replace(
            _turn(position, speaker, " ".join(["word"] * words), moment.isoformat(), session),
            id=len(passages) + 1,
        )
        if split and words > 1:
            passages += [Passage(turn, 0, 4), Passage(turn, 5, len(turn.text))]
        else:
            passages.append(Passage(turn, 0, len(turn.text)))
    lowered = [p.text.lower() for p in passages]
    before = min(cut, len(passages))
    old = burst_groups(passages[:before], 60, 8)
    grouped = (old, burst_texts(lowered[:before], old))
    whole = burst_groups(passages, 60, 8)
    grown = burst_groups_grown(passages, lowered, before, grouped, 60, 8)
    assert grown == (whole, burst_texts(lowered, whole))


def test_a_turn_added_before_a_burst_of_its_session_regroups_the_session() -> None:
    old = _passages(CHAT[1:3] + CHAT[3:5])
    lowered = [p.text.lower() for p in old + _passages(CHAT[:1])]
    groups = burst_groups(old, 60, 50)
    grown = burst_groups_grown(
        old + _passages(CHAT[:1]), lowered, 4, (groups, burst_texts(lowered[:4], groups)), 60, 50
    )
    whole = burst_groups(old + _passages(CHAT[:1]), 60, 50)
    assert grown == (whole, burst_texts(lowered, whole)) and whole == [4, 4, 2, 2, 4]
