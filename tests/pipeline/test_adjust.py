"""The adjustments after fusion as a kind: every registered one keeps every passage, leaves
the scores sorted best first, is deterministic and moves scores only the way it says (a
discount never raises one, a credit never lowers one), on generated conversations."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

import numpy as np
import pytest
from factories import make_turn
from hypothesis import given, settings
from hypothesis import strategies as st

from smartsearch_mcp.config import ConfigError, RankConfig
from smartsearch_mcp.pipeline.adjust import ADJUST, Context, adjust
from smartsearch_mcp.pipeline.analyze import analyze_query
from smartsearch_mcp.stages import ADJUSTMENT_NAMES, ADJUSTMENTS
from smartsearch_mcp.types import Candidate, Passage, Scored

NOW = datetime(2026, 11, 30, 12, 0)
WORDS = ["port", "5173", "4321", "moved", "to", "the", "app", "opening", "December", "10"]
WORDS += ["grant", "$52k", "switched", "vendor", "ok", "thanks", "use", "instead", "trip"]
QUESTIONS = [
    "What port does the web app use?",
    "When is the opening?",
    "What did we say last week?",
]
LOWERS = {"echo_discount", "slice_discount"}  # never raise a score
RAISES = {"session_support", "burst_credit", "reply_credit", "time_range"}  # never lower one


@st.composite
def rankings(draw: st.DrawFn) -> list[Scored]:
    """A ranking of passages of a small conversation: sessions, users and an assistant,
    bursts of messages seconds apart, long turns cut into two passages, scores best first."""
    size = draw(st.integers(2, 14))
    items: list[Scored] = []
    clock = NOW - timedelta(days=20)
    for turn_id in range(1, size + 1):
        clock += timedelta(seconds=draw(st.sampled_from([10, 30, 3600, 86400 * 3])))
        role = draw(st.sampled_from(["user", "assistant"]))
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12)))
        turn = make_turn(
            turn_id,
            text,
            session_id=draw(st.sampled_from(["a", "b"])),
            role=role,
            speaker="Wren" if role == "user" else None,
            timestamp=clock.isoformat(timespec="seconds"),
        )
        slices = [(0, len(text))]
        if draw(st.booleans()) and len(text) > 8:  # a long turn: a second, later slice
            slices.append((len(text) // 2, len(text)))
        for start, end in slices:
            candidate = Candidate(Passage(turn, start, end), lexical_score=draw(st.floats(0, 3)))
            score = draw(st.floats(0, 1))
            scores = {"bi_encoder": draw(st.floats(-1, 1)), "lexical": candidate.lexical_score}
            confidence = draw(st.floats(0, 1))
            items.append(Scored(candidate, score, scores, confidence=confidence))
    return sorted(items, key=lambda item: -item.score)


def similarity(passages: Sequence[Scored]) -> np.ndarray:
    """Word overlap of the passages' texts, as a stand-in for the bi-encoder's cosine."""
    words = [set(item.candidate.passage.text.lower().split()) for item in passages]
    return np.array([[len(a & b) / max(1, len(a | b)) for b in words] for a in words])


def context(question: str, names: tuple[str, ...]) -> Context:
    rank = RankConfig(adjust=names)
    return Context(rank, 60, analyze_query(question, None, NOW), similarity)


def keys(items: Sequence[Scored]) -> Counter[tuple[int, int]]:
    return Counter((i.candidate.passage.turn.id, i.candidate.passage.start) for i in items)


@pytest.mark.parametrize("name", ADJUSTMENT_NAMES)
@settings(max_examples=60, deadline=None)
@given(ranked=rankings(), question=st.sampled_from(QUESTIONS))
def test_every_adjustment_keeps_the_passages_sorted_and_moves_scores_only_its_way(
    name: str, ranked: list[Scored], question: str
) -> None:
    ctx = context(question, (name,))
    out = ADJUST[name](list(ranked), ctx)

    assert keys(out) == keys(ranked)
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
    assert out == ADJUST[name](list(ranked), context(question, (name,)))  # deterministic
    before = {(i.candidate.passage.turn.id, i.candidate.passage.start): i.score for i in ranked}
    after = {(i.candidate.passage.turn.id, i.candidate.passage.start): i.score for i in out}
    if name in LOWERS:
        assert all(after[k] <= before[k] for k in before)
    if name in RAISES:
        assert all(after[k] >= before[k] for k in before)
    if name == "current_facts":  # places are traded: the same scores, on other passages
        assert sorted(after.values()) == sorted(before.values())


@settings(max_examples=60, deadline=None)
@given(ranked=rankings(), question=st.sampled_from(QUESTIONS))
def test_a_stage_runs_what_the_preset_lists_in_its_order(
    ranked: list[Scored], question: str
) -> None:
    names = ("session_support", "reply_credit", "echo_discount", "time_range")
    ctx = context(question, names)
    by_hand = ranked
    for name in ("session_support", "reply_credit", "echo_discount"):
        by_hand = ADJUST[name](by_hand, ctx)
    assert adjust(list(ranked), "fusion", ctx) == by_hand
    assert adjust(list(ranked), "final", ctx) == ADJUST["time_range"](list(ranked), ctx)
    assert adjust(list(ranked), "fusion", context(question, ())) == ranked


def test_every_registered_adjustment_has_an_implementation_and_its_settings_exist() -> None:
    assert set(ADJUST) == set(ADJUSTMENTS)
    fields = {f.name for f in dataclasses.fields(RankConfig)}
    for spec in ADJUSTMENTS.values():
        assert set(spec.settings) <= fields, spec.name


def test_the_list_is_checked_when_the_config_is_built() -> None:
    with pytest.raises(ConfigError, match="must not name the same one twice"):
        RankConfig(adjust=("reply_credit", "reply_credit"))
    with pytest.raises(ConfigError, match="list them in that order"):
        RankConfig(adjust=("time_range", "reply_credit"))
    with pytest.raises(ConfigError, match=r"remove it from rank\.adjust to turn it off"):
        RankConfig(adjust=("reply_credit",), reply_credit=0.0)
    with pytest.raises(ConfigError, match="has no effect: 'echo_discount' is not in"):
        RankConfig(adjust=("time_range",), echo_discount=0.5)
    with pytest.raises(ConfigError, match=r"rank\.adjust"):
        RankConfig(adjust=("no_such_thing",))
    assert RankConfig(adjust=(), echo_discount=0.0).adjustments("fusion") == ()
