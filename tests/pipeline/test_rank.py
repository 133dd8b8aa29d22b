"""Fusion of ranker scores and session support (stage 4), as pure functions."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from factories import make_passage
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.config import RankConfig
from smartsearch_mcp.pipeline.adjust import Context
from smartsearch_mcp.pipeline.adjust.replies import (
    ECHO_MIN_WORDS,
    SHORT_TURN_WORDS,
    adds_specifics,
    answers,
    credit_replied_turns,
    discount_echoes,
    restates,
)
from smartsearch_mcp.pipeline.adjust.session import add_session_support
from smartsearch_mcp.pipeline.adjust.slices import discount_later_slices
from smartsearch_mcp.pipeline.rank import first_pass, follow_with_rest, fuse
from smartsearch_mcp.types import Candidate, Passage, Scored


def candidate(turn_id: int, session: str, lexical: float = 1.0) -> Candidate:
    passage = make_passage(turn_id, f"turn {turn_id}", session_id=session)
    return Candidate(passage=passage, lexical_score=lexical)


def scored(*items: tuple[int, str, float]) -> list[Scored]:
    return [Scored(candidate=candidate(i, s), score=x) for i, s, x in items]


def ids(items: list[Scored]) -> list[int]:
    return [s.candidate.passage.turn.id for s in items]


def test_fuse_sorts_by_reciprocal_rank_and_keeps_each_rankers_raw_score() -> None:
    cands = [candidate(1, "a"), candidate(2, "a"), candidate(3, "b")]
    out = fuse(cands, {"x": [0.1, 0.9, 0.5], "y": [0.2, 0.8, 0.9]}, rrf_k=1, weights={})
    assert ids(out) == [2, 3, 1]
    assert out[0].ranker_scores == {"x": 0.9, "y": 0.8}


def test_fuse_with_one_ranker_keeps_its_scores() -> None:
    out = fuse([candidate(1, "a"), candidate(2, "a")], {"x": [-3.0, 2.5]}, 60, {})
    assert [s.score for s in out] == [2.5, -3.0]


def test_a_passage_in_a_session_with_strong_company_overtakes_a_stray_better_one() -> None:
    items = scored((1, "stray", 0.5), (2, "topic", 0.45), (3, "topic", 0.9))
    out = add_session_support(items, weight=1.0, top_n=3)
    # Supports: topic mean(0.9, 0.45) = 0.675, stray 0.5 -> 2 scores 1.125 and 1 scores 1.0.
    assert ids(out) == [3, 2, 1]
    assert [round(s.score, 3) for s in out] == [1.575, 1.125, 1.0]


def test_session_support_averages_only_the_best_top_n_of_a_session() -> None:
    items = scored((1, "a", 1.0), (2, "a", 0.0), (3, "b", 0.8), (4, "b", 0.8))
    assert ids(add_session_support(items, weight=1.0, top_n=1)) == [1, 3, 4, 2]
    assert ids(add_session_support(items, weight=1.0, top_n=2)) == [3, 4, 1, 2]


def test_session_support_of_weight_zero_changes_nothing() -> None:
    items = scored((1, "a", 0.2), (2, "b", 0.9))
    assert add_session_support(items, weight=0.0, top_n=3) == items


@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 1)), min_size=1, max_size=30),
    st.floats(0, 2),
    st.integers(1, 5),
)
def test_session_support_keeps_every_passage_and_sorts_best_first(
    rows: list[tuple[str, float]], weight: float, top_n: int
) -> None:
    items = sorted(scored(*[(i, s, x) for i, (s, x) in enumerate(rows)]), key=lambda s: -s.score)
    out = add_session_support(items, weight, top_n)
    assert sorted(ids(out)) == sorted(ids(items))
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
    # Within one session the order never changes: the same bonus is added to each.
    for session in "abc":
        assert [i for i in ids(out) if rows[i][0] == session] == [
            i for i in ids(items) if rows[i][0] == session
        ]


def said(
    turn_id: int, position: int, role: str, score: float, start: int = 0, asks: bool = False
) -> Scored:
    # an assistant's reply as long as the echo discount looks at (ECHO_MIN_WORDS), and a user
    # turn too long to be only a request (SHORT_TURN_WORDS): it says something
    text = f"turn {turn_id} " * (ECHO_MIN_WORDS if role == "assistant" else SHORT_TURN_WORDS)
    text += "why?" if asks else ""
    passage = make_passage(turn_id, text, session_id="s", position=position, role=role)
    if start:
        passage = Passage(turn=passage.turn, start=start, end=len(text))
    return Scored(candidate=Candidate(passage=passage, lexical_score=1.0), score=score)


def test_the_user_turn_a_strong_reply_answers_rises_just_ahead_of_it() -> None:
    items = [
        said(11, 1, "assistant", 0.9),  # a long reply to turn 10
        said(20, 5, "user", 0.6),
        said(10, 0, "user", 0.3),  # what the user said: the evidence
    ]

    out = credit_replied_turns(items, credit=1.0)

    assert ids(out) == [10, 11, 20]
    assert [s.score for s in out] == [0.9, 0.9, 0.6]
    assert ids(credit_replied_turns(items, credit=0.5)) == [11, 20, 10]  # raised to 0.45
    assert credit_replied_turns(items, credit=0.0) == items


def test_only_a_user_turn_just_before_an_assistant_passage_is_credited() -> None:
    items = [
        said(12, 2, "user", 0.9),  # a user turn after a user turn
        said(11, 1, "user", 0.1),
        said(51, 31, "user", 0.85),  # a user turn never lifts the assistant before it
        said(50, 30, "assistant", 0.15),
        said(30, 9, "assistant", 0.8),  # turn 8 is not among the passages
        said(40, 20, "assistant", 0.7, start=40),  # a later passage of turn 40 ...
        said(39, 19, "user", 0.2),  # ... still credits the turn it answers
        said(38, 18, "user", 0.05, start=40),  # not a first passage: never raised
    ]

    out = credit_replied_turns(items, credit=1.0)

    scores = {s.candidate.passage.turn.id: s.score for s in out}
    assert scores == {12: 0.9, 11: 0.1, 51: 0.85, 50: 0.15, 30: 0.8, 40: 0.7, 39: 0.7, 38: 0.05}
    assert ids(out) == [12, 51, 30, 39, 40, 50, 11, 38]


def test_reply_credit_goes_to_the_strongest_of_the_users_turns_in_a_row_before_the_reply():
    # "Got a new tent, a two-person one." / "The pack weighs 9 kg now." / "Nice. Pitch the
    # new tent once in the garden first": the reply answers both user turns.
    items = [
        said(14, 4, "assistant", 0.9),
        said(10, 0, "user", 0.8),
        said(12, 2, "user", 0.5),  # the tent: what was asked about
        said(13, 3, "user", 0.2),  # the pack weight, just before the reply
        said(11, 1, "assistant", 0.1),  # ends the user's run of turns
    ]

    assert ids(credit_replied_turns(items, credit=1.0)) == [12, 14, 10, 13, 11]


def worded(turn_id: int, position: int, role: str, score: float, text: str) -> Scored:
    passage = make_passage(turn_id, text, session_id="s", position=position, role=role)
    return Scored(candidate=Candidate(passage=passage, lexical_score=1.0), score=score)


def test_an_assistant_turn_that_only_asks_credits_the_users_answer_after_it() -> None:
    items = [
        worded(11, 1, "assistant", 0.9, "Should the export also include archived projects?"),
        worded(10, 0, "user", 0.8, "Version 3 adds a CSV export of the project list."),
        worded(13, 3, "assistant", 0.7, "Noted. Shall I add it to the checklist?"),
        worded(12, 2, "user", 0.3, "Yes, archived ones too, on a separate sheet."),
        worded(14, 4, "user", 0.2, "Also, Bram starts on Monday."),
    ]

    out = credit_replied_turns(items, credit=1.0)

    # the question lifts its answer (12), not the turn it follows (10); the reply that also
    # states something (13) credits the user's turn before it as any reply does (12 again)
    assert ids(out) == [12, 11, 10, 13, 14]
    assert [s.score for s in out] == [0.9, 0.9, 0.8, 0.7, 0.2]


def test_an_assistant_question_whose_answer_was_not_found_credits_nobody() -> None:
    items = [
        worded(11, 1, "assistant", 0.9, "Which table did they give us?"),
        worded(10, 0, "user", 0.3, "Phoned the bistro about the reunion."),
    ]

    assert credit_replied_turns(items, credit=1.0) == items


@given(
    st.lists(
        st.tuples(
            st.integers(0, 8),
            st.sampled_from(["user", "assistant"]),
            st.floats(0, 1),
            st.booleans(),
        ),
        max_size=20,
        unique_by=lambda row: row[0],
    ),
    st.floats(0, 1),
)
def test_reply_credit_keeps_every_passage_never_lowers_a_score_and_sorts_best_first(
    rows: list[tuple[int, str, float, bool]], credit: float
) -> None:
    items = [said(100 + p, p, role, x, asks=asks) for p, role, x, asks in rows]
    items.sort(key=lambda s: -s.score)

    out = credit_replied_turns(items, credit)

    assert sorted(ids(out)) == sorted(ids(items))
    before = {s.candidate.passage.turn.id: s.score for s in items}
    assert all(s.score >= before[s.candidate.passage.turn.id] for s in out)
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))


def test_a_reply_to_a_user_turn_that_was_found_falls_below_a_passage_it_led() -> None:
    items = [
        said(11, 1, "assistant", 0.9),  # restates turn 10's question, found too
        said(10, 0, "user", 0.88),
        said(31, 9, "assistant", 0.8),  # its user turn (8) was not found: kept
        said(20, 5, "user", 0.7),
        said(41, 13, "assistant", -0.5),  # a negative score goes further down
        said(40, 12, "user", -0.6),
    ]

    out = discount_echoes(items, discount=0.3)

    assert ids(out) == [10, 31, 20, 11, 40, 41]
    assert [round(s.score, 3) for s in out] == [0.88, 0.8, 0.7, 0.63, -0.6, -0.65]
    assert discount_echoes(items, discount=0.0) == items


def test_every_slice_of_a_turn_but_its_best_is_discounted() -> None:
    items = [
        said(40, 20, "assistant", 0.9),  # a long answer's best slice
        said(40, 20, "assistant", 0.85, start=40),
        said(40, 20, "assistant", 0.8, start=80),
        said(12, 2, "user", 0.7),
    ]

    out = discount_later_slices(items, discount=0.3)

    assert [(s.candidate.passage.turn.id, s.candidate.passage.start) for s in out] == [
        (40, 0),
        (12, 0),
        (40, 40),
        (40, 80),
    ]
    assert [round(s.score, 3) for s in out] == [0.9, 0.7, 0.595, 0.56]
    assert discount_later_slices(items, discount=0.0) == items


@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.sampled_from(["user", "assistant"]), st.floats(-1, 1)),
        max_size=20,
    ),
    st.floats(0, 1),
)
def test_discounts_keep_every_passage_never_raise_a_score_and_sort_best_first(
    rows: list[tuple[int, str, float]], discount: float
) -> None:
    items = [said(100 + p, p, role, x, start=10 * i) for i, (p, role, x) in enumerate(rows)]
    items.sort(key=lambda s: -s.score)
    before = {s.candidate.passage.key: s.score for s in items}
    for out in (discount_echoes(items, discount), discount_later_slices(items, discount)):
        assert sorted(s.candidate.passage.key for s in out) == sorted(before)
        assert all(s.score <= before[s.candidate.passage.key] for s in out)
        assert all(a.score >= b.score for a, b in itertools.pairwise(out))


def test_a_cascade_puts_the_head_first_and_the_rest_in_first_pass_order_below_it() -> None:
    first = scored((1, "a", 0.9), (2, "a", 0.8), (3, "b", 0.7), (4, "b", 0.6), (5, "c", 0.6))
    head = scored((2, "a", 0.05), (1, "a", 0.04))  # ranked again, on another scale

    out = follow_with_rest(head, first)

    assert ids(out) == [2, 1, 3, 4, 5]
    assert [s.score for s in out[:2]] == [0.05, 0.04]
    # the rest keep their differences, shifted to the head's lowest score: sorted, ties kept
    assert [s.score for s in out[2:]] == pytest.approx([0.04, -0.06, -0.06])
    assert out[2].ranker_scores == first[2].ranker_scores


def test_a_cascades_rest_below_the_head_already_or_at_minus_infinity_is_left_as_it_is() -> None:
    head = scored((1, "a", 5.0))
    below = scored((1, "a", 9.0), (2, "a", 1.0), (3, "a", float("-inf")))
    unscored = scored((1, "a", 9.0), (2, "a", float("-inf")))

    assert [s.score for s in follow_with_rest(head, below)] == [5.0, 1.0, float("-inf")]
    assert [s.score for s in follow_with_rest(head, unscored)] == [5.0, float("-inf")]
    assert follow_with_rest([], below) == below


def test_the_first_pass_leaves_out_the_expensive_rankers_and_lexical_joins_a_lone_prior() -> None:
    cands = [candidate(1, "a", lexical=1.0), candidate(2, "a", lexical=3.0), candidate(3, "a", 2.0)]
    rank = RankConfig(scorers=("cross_encoder", "speaker"))
    scores = {"cross_encoder": [9.0, 0.0, 5.0], "speaker": [1.0, 1.0, 1.0]}

    out = first_pass(cands, scores, Context(rank))

    assert ids(out) == [2, 3, 1]  # by lexical score: the speaker flag ties them all
    assert set(out[0].ranker_scores) == {"lexical", "speaker"}
    with_bi = {**scores, "bi_encoder": [0.1, 0.2, 0.9]}
    assert ids(first_pass(cands, with_bi, Context(rank))) == [2, 3, 1]  # not a ranker of this one
    own = RankConfig(
        scorers=("cross_encoder", "speaker"),
        expensive_candidates=2,
        first_pass=("bi_encoder", "speaker"),
    )
    out = first_pass(cands, with_bi, Context(own))
    assert ids(out) == [3, 2, 1] and set(out[0].ranker_scores) == {"bi_encoder", "speaker"}


def matched(turn_id: int, position: int, role: str, score: float, lexical: float) -> Scored:
    """A whole turn of session "s" whose grep match of the question scores `lexical` (a user
    turn too long to be only a request)."""
    text = f"turn {turn_id} " * (ECHO_MIN_WORDS if role == "assistant" else SHORT_TURN_WORDS)
    passage = make_passage(turn_id, text, session_id="s", position=position, role=role)
    return Scored(candidate=Candidate(passage=passage, lexical_score=lexical), score=score)


def test_a_user_turn_matching_none_of_the_question_rises_to_just_after_its_reply() -> None:
    # "go with the second one" before "Done: `upload_chunk` now resumes from the last
    # offset": the reply holds the answer and stays first; the request comes with it, not
    # ahead of it
    items = [
        matched(21, 1, "assistant", 0.9, lexical=3.1),
        matched(30, 5, "user", 0.5, lexical=2.0),
        matched(20, 0, "user", 0.2, lexical=0.0),
    ]

    out = credit_replied_turns(items, credit=1.0)

    assert ids(out) == [21, 20, 30]
    assert [s.score for s in out] == [0.9, 0.9, 0.5]


def test_a_users_question_ranked_above_its_answer_lifts_the_answer_just_ahead_of_it() -> None:
    items = [
        worded(25, 4, "user", 0.39, "how do I rebuild the search index again"),
        worded(7, 1, "assistant", 0.33, "The import finished without errors."),
        worded(26, 5, "assistant", 0.26, "`make reindex`, it takes about 4 minutes."),
    ]

    out = credit_replied_turns(items, credit=1.0)

    assert ids(out) == [26, 25, 7]
    assert [s.score for s in out] == [0.39, 0.39, 0.33]
    # a statement ahead of a reply that adds nothing to it stays ahead: it holds what was said
    statement = [
        worded(25, 4, "user", 0.39, "the search index needs a nightly rebuild, use cron"),
        worded(
            26, 5, "assistant", 0.26, "Sure, cron rebuilds the search index nightly from now on."
        ),
    ]
    assert credit_replied_turns(statement, credit=1.0) == statement


def test_a_short_request_ranked_above_the_reply_that_carries_it_out_lifts_the_reply() -> None:
    # the request names the subject, the reply what was done: the reply is the answer
    items = [
        worded(40, 2, "user", 0.41, "the uploads dir fills the disk every week, fix it"),
        worded(41, 3, "assistant", 0.3, "Added a cleanup job in `cron/uploads.sh` that deletes "
               "files older than 14 days."),
        worded(42, 4, "user", 0.35, "thanks"),
    ]  # fmt: skip

    out = credit_replied_turns(items, credit=1.0)

    assert ids(out) == [41, 40, 42]
    assert [s.score for s in out] == [0.41, 0.41, 0.35]
    # a long turn tells more than a request, and keeps its place
    long_ = worded(40, 2, "user", 0.41, "the uploads dir fills the disk every week " * 4)
    assert ids(credit_replied_turns([long_, items[1]], credit=1.0)) == [40, 41]


def test_a_reply_to_a_users_question_is_not_an_echo() -> None:
    question = worded(25, 0, "user", 0.7, "how do I rebuild the search index again")
    reply = worded(
        26, 1, "assistant", 0.8, "make reindex: the search index rebuild takes 4 minutes"
    )

    assert discount_echoes([reply, question], discount=0.3) == [reply, question]
    assert not restates(question, reply)


def test_a_long_question_tells_what_its_reply_restates() -> None:
    # the asker's circumstances are in the question: the reply that repeats them is an echo
    question = worded(
        25,
        0,
        "user",
        0.7,
        "How should I get ready for the interview at Corvid on March 5 when my current "
        "manager still expects the quarterly report from me that same week?",
    )
    advice = "For the Corvid interview on March 5, first agree on the report's date. " * 8
    reply = worded(26, 1, "assistant", 0.8, advice)

    assert restates(question, reply)
    assert ids(discount_echoes([reply, question], discount=0.3)) == [25, 26]
    assert ids(credit_replied_turns([question, reply], credit=1.0)) == [25, 26]


def test_a_short_reply_carrying_out_its_user_turn_keeps_its_score() -> None:
    # what was done, and too short to crowd the budget
    said_ = worded(27, 0, "user", 0.7, "the staging box is out of disk, move the logs elsewhere")
    done = worded(28, 1, "assistant", 0.8, "Moved the logs to /mnt/logs in deploy/logging.yaml")

    assert not restates(said_, done)
    assert discount_echoes([done, said_], discount=0.3) == [done, said_]


def test_a_short_reply_is_no_echo_even_when_it_adds_nothing_to_its_user_turn() -> None:
    said_ = worded(5, 0, "user", 0.7, "the plumber comes Thursday at 8am, his name is Arturo")
    noted = worded(6, 1, "assistant", 0.8, "Noted: plumber Arturo, Thursday at 8 am.")

    assert discount_echoes([noted, said_], discount=0.3) == [noted, said_]


def test_a_short_reply_adds_code_a_path_a_name_or_a_value() -> None:
    said_ = worded(5, 0, "user", 0.7, "the plumber comes thursday, move the retry limit up too")
    for reply in (
        "Done: `MAX_RETRIES = 5`.",
        "Raised it in deploy/retry.yaml.",
        "Raised it, as Arturo asked.",
        "Raised the retry limit to 7.",
        "Booked him for December 4.",
    ):
        assert adds_specifics(worded(6, 1, "assistant", 0.8, reply), said_), reply
    assert not adds_specifics(worded(6, 1, "assistant", 0.8, "Noted: plumber on Thursday."), said_)


def test_a_user_turn_matching_the_question_as_well_as_its_reply_is_still_credited() -> None:
    items = [matched(21, 1, "assistant", 0.9, lexical=3.0), matched(20, 0, "user", 0.2, 1.6)]

    assert ids(credit_replied_turns(items, credit=1.0)) == [20, 21]


def test_a_long_reply_is_an_echo_of_a_found_turn_whatever_words_it_matches() -> None:
    # a long passage elaborates, and costs a fifth of a budget: below the turn it replies
    # to whether it matches more of the question's words (5.9) or fewer (3.0)
    for lexical in (5.9, 3.0):
        items = [matched(16, 1, "assistant", 0.8, lexical), matched(15, 0, "user", 0.7, 2.5)]
        out = discount_echoes(items, discount=0.3)
        assert ids(out) == [15, 16]
        assert out[1].score == pytest.approx(0.56)
    # its turn not found: the reply is all there is
    alone = [matched(16, 1, "assistant", 0.8, 5.9), matched(30, 5, "user", 0.7, 2.5)]
    assert discount_echoes(alone, discount=0.3) == alone


def test_a_long_reply_does_not_answer_a_short_question_ahead_of_it() -> None:
    question = worded(25, 0, "user", 0.7, "how do I rebuild the search index again")
    short = worded(26, 1, "assistant", 0.5, "`make reindex`, about 4 minutes")
    long_ = worded(26, 1, "assistant", 0.5, "`make reindex` rebuilds the search index. " * 16)

    assert answers(question, short)
    assert not answers(question, long_)
    assert ids(credit_replied_turns([question, short], credit=1.0)) == [26, 25]
    assert ids(credit_replied_turns([question, long_], credit=1.0)) == [25, 26]


def test_restating_compares_the_grep_match_of_the_two_turns() -> None:
    reply = matched(2, 1, "assistant", 0.5, lexical=4.0)
    assert restates(matched(1, 0, "user", 0.5, lexical=2.0), reply)
    assert not restates(matched(1, 0, "user", 0.5, lexical=1.9), reply)
    assert restates(matched(1, 0, "user", 0.5, 0.0), matched(2, 1, "assistant", 0.5, 0.0))


def test_a_reply_matching_none_of_the_questions_words_does_not_answer_a_short_turn() -> None:
    # asked when the recital is: the ack adds a name, and nothing the question asks for
    said_ = worded(7, 0, "user", 0.6, "The recital moved to Thursday.")
    ack = worded(8, 1, "assistant", 0.5, "Noted; I'll tell Marguerite.")
    unmatched = dataclasses.replace(
        ack, candidate=dataclasses.replace(ack.candidate, lexical_score=0.0)
    )

    assert answers(said_, ack)  # it matches the question's words as well as the turn
    assert not answers(said_, unmatched)
    assert ids(credit_replied_turns([said_, unmatched], credit=1.0)) == [7, 8]
