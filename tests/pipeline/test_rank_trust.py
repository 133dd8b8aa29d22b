"""How sure the ranking is, current facts first, and date ranges (stage 4, pure functions),
on small realistic fixtures: a trip moved from Ljubljana to Piran, a framework upgraded."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from factories import make_passage
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.dates import DateRange, mentioned_ranges
from smartsearch_mcp.pipeline.adjust.current import prefer_later_restatements
from smartsearch_mcp.pipeline.adjust.replies import credit_replied_turns
from smartsearch_mcp.pipeline.adjust.time_range import prefer_time_range
from smartsearch_mcp.pipeline.language import foreign_language
from smartsearch_mcp.pipeline.rank import ranking_confidence, with_confidence
from smartsearch_mcp.types import Candidate, Scored


def item(turn_id: int, text: str, score: float, session: str, when: str) -> Scored:
    passage = make_passage(turn_id, text, session_id=session, timestamp=when)
    return Scored(Candidate(passage, 1.0), score)


def ids(items: list[Scored]) -> list[int]:
    return [s.candidate.passage.turn.id for s in items]


TRIP = [
    item(1, "We're planning the March trip to Ljubljana.", 0.9, "s1",
         "2026-10-26T19:00:00"),
    item(2, "Pilchard cracked a tooth.", 0.5, "s2", "2026-11-05T08:00:00"),
    item(3, "We rented a flat in Piran for March 4 to 10.", 0.8, "s4",
         "2026-11-25T20:30:00"),
]  # fmt: skip


def test_a_later_restatement_in_another_session_trades_places_with_the_earlier_one() -> None:
    similarity = [[1.0, 0.1, 0.6], [0.1, 1.0, 0.1], [0.6, 0.1, 1.0]]
    ranked = [TRIP[0], dataclasses.replace(TRIP[1], score=0.85), TRIP[2]]
    out = prefer_later_restatements(ranked, similarity, threshold=0.45)
    assert ids(out) == [3, 2, 1]  # both trip turns stay; the current plan first
    assert [s.score for s in out] == [0.9, 0.85, 0.8]  # the tooth between them keeps its place


def test_unrelated_or_earlier_turns_do_not_move() -> None:
    unrelated = [[1.0, 0.1, 0.2], [0.1, 1.0, 0.1], [0.2, 0.1, 1.0]]
    assert ids(prefer_later_restatements(TRIP, unrelated, threshold=0.45)) == [1, 2, 3]
    older_below = [TRIP[2], TRIP[1], TRIP[0]]
    similar = [[1.0, 0.1, 0.6], [0.1, 1.0, 0.1], [0.6, 0.1, 1.0]]
    assert ids(prefer_later_restatements(older_below, similar, 0.45)) == [3, 2, 1]
    assert ids(prefer_later_restatements(TRIP, similar, threshold=0.0)) == [1, 2, 3]


def test_turns_of_one_session_are_conversation_not_updates() -> None:
    same = [
        item(1, "We pin Rails 7.1 for now.", 0.9, "p1", "2026-09-01T10:00:00"),
        item(2, "Queues run on Sidekiq.", 0.8, "p1", "2026-09-01T10:02:00"),
    ]
    assert ids(prefer_later_restatements(same, [[1, 0.9], [0.9, 1]], 0.45)) == [1, 2]


def test_confidence_is_high_where_every_ranker_agrees_and_low_for_the_typical_candidate():
    rows = [
        Scored(Candidate(make_passage(i, "t"), 1.0), 1.0 - i / 10, {"dense": d, "lex": x})
        for i, (d, x) in enumerate([(0.8, 5.0), (0.8, 0.5), (0.3, 0.5), (0.2, 0.4), (0.2, 0.3)])
    ]
    confidence = ranking_confidence(rows)
    assert confidence[0] == 1.0
    assert 0 < confidence[1] < 1
    assert confidence[3] == confidence[4] == 0.0


def lexical_rows(scores: list[float]) -> list[Scored]:
    return [
        Scored(Candidate(make_passage(i, "t"), s), s, {"lexical": s}) for i, s in enumerate(scores)
    ]


def test_three_matching_turns_out_of_twenty_are_all_fairly_sure() -> None:
    # "What was the vet's verdict on Pilchard's tooth?": two turns match two words, the answer one
    # word less; the 17 turns that match nothing are the typical passage, not the third match.
    rows = lexical_rows([3.25, 3.25, 2.17])
    alone = ranking_confidence(rows)
    assert alone[2] == 0.0  # the median of three matches is no background
    in_scope = ranking_confidence(rows, unseen=17)
    assert in_scope[:2] == [1.0, 1.0]
    assert in_scope[2] == 2.17 / 3.25


def test_unseen_passages_of_a_similarity_ranker_count_as_its_weakest_candidate() -> None:
    rows = [
        Scored(Candidate(make_passage(i, "t"), 1.0), 1.0, {"dense": d})
        for i, d in enumerate([0.9, 0.5, 0.4, 0.3])
    ]
    assert ranking_confidence(rows, unseen=10)[1] == (0.5 - 0.3) / (0.9 - 0.3)


def _by_ranker(scores: dict[str, list[float]]) -> list[Scored]:
    """One row per passage, with each ranker's score of it from `scores` (ranker -> column)."""
    count = len(next(iter(scores.values())))
    return [
        Scored(Candidate(make_passage(i, "t"), 1.0), 1.0, {n: v[i] for n, v in scores.items()})
        for i in range(count)
    ]


def test_one_rankers_outlier_neither_makes_a_passage_sure_nor_unsure() -> None:
    scores = {  # passage 1 only the dense ranker likes; passage 0 all but bm25 like
        "dense": [0.9, 0.9, 0.1, 0.1, 0.1],
        "lexical": [4.0, 0.0, 0.0, 0.0, 0.1],
        "bm25": [0.0, 0.0, 0.0, 0.0, 2.0],
    }
    rows = _by_ranker(scores)
    confidence = ranking_confidence(rows)
    assert confidence[0] == 1.0
    assert confidence[1] == 0.0
    assert confidence[4] < 0.1


def test_only_the_voting_rankers_say_how_sure_and_all_do_when_none_of_them_scored() -> None:
    scores = {  # "late" and "bm25" like passage 1, which neither of the voters does
        "dense": [0.9, 0.1, 0.1, 0.1, 0.1],
        "lexical": [4.0, 0.0, 0.0, 0.0, 0.1],
        "late": [0.1, 0.9, 0.1, 0.1, 0.1],
        "bm25": [0.0, 3.0, 0.0, 0.0, 0.0],
    }
    rows = _by_ranker(scores)
    everyone = ranking_confidence(rows)
    voters = ranking_confidence(rows, voters=("dense", "lexical"))
    assert everyone[1] == 0.5 and voters[1] == 0.0
    assert voters[0] == 1.0
    assert ranking_confidence(rows, voters=("splade",)) == everyone  # none of them scored
    attached = [s.confidence for s in with_confidence(rows, voters=("dense", "lexical"))]
    assert attached == voters


def test_a_passage_a_ranker_could_not_score_is_judged_by_the_others() -> None:
    # Not embedded yet (NaN from the bi-encoders): the lexical ranker alone says how sure.
    nan = float("nan")
    rows = [
        Scored(Candidate(make_passage(i, "t"), 1.0), 1.0, {"dense": d, "context": d, "lexical": x})
        for i, (d, x) in enumerate([(0.9, 2.0), (nan, 2.0), (0.1, 0.0), (nan, 0.0)])
    ]
    assert ranking_confidence(rows, unseen=10) == [1.0, 1.0, 0.0, 0.0]


@given(
    st.lists(st.tuples(st.floats(-5, 5), st.floats(0, 9)), min_size=1, max_size=30),
    st.integers(0, 10_000),
)
def test_confidence_is_always_between_0_and_1(values: list[tuple[float, float]], unseen) -> None:
    rows = [
        Scored(Candidate(make_passage(i, "t"), 1.0), v, {"x": v, "lexical": x})
        for i, (v, x) in enumerate(values)
    ]
    assert all(0.0 <= c <= 1.0 for c in ranking_confidence(rows, unseen))


def test_a_credited_user_turn_is_as_certain_as_the_reply_that_lifted_it() -> None:
    user = Scored(
        Candidate(make_passage(1, "I keep Friday afternoons free", position=0), 1.0),
        0.1,
        {"x": 0.1},
    )
    reply = Scored(
        Candidate(
            make_passage(
                2, "Great idea, free Friday afternoons help", position=1, role="assistant"
            ),
            1.0,
        ),
        0.9,
        {"x": 0.9},
    )
    other = Scored(Candidate(make_passage(3, "other", position=5), 1.0), 0.2, {"x": 0.2})
    out = credit_replied_turns(with_confidence([reply, other, user]), 1.0)
    assert ids(out)[0] == 1
    assert out[0].confidence == out[1].confidence == 1.0


def test_turns_inside_last_week_rank_first_and_nothing_inside_warns() -> None:
    last_week = DateRange(datetime(2026, 11, 23), datetime(2026, 11, 30), "last week")
    out, warning = prefer_time_range(TRIP, last_week)
    assert ids(out) == [3, 1, 2] and warning is None
    assert [s.score for s in out] == sorted((s.score for s in out), reverse=True)
    june = DateRange(datetime(2026, 6, 1), datetime(2026, 7, 1), "in June")
    out, warning = prefer_time_range(TRIP, june)
    assert ids(out) == [1, 2, 3]
    assert warning is not None and "'in June'" in warning


def test_dates_in_a_turn_are_read_against_the_turns_own_time() -> None:
    said = datetime(2026, 11, 20, 10, 0)
    found = mentioned_ranges("We fly out on December 3rd and saw Anselm yesterday.", said)
    assert [(r.start.date().isoformat(), r.expression) for r in found] == [
        ("2026-12-03", "December 3rd"),  # the nearest December 3rd, ahead of the turn
        ("2026-11-19", "yesterday"),
    ]
    assert mentioned_ranges("may I ask, the 3 Dec 2026 one", said)[0].expression == "3 Dec 2026"


def test_questions_in_other_languages_or_scripts_are_recognised() -> None:
    assert foreign_language("¿Dónde nos alojamos en marzo?") == "Spanish"
    assert foreign_language("Wo haben wir im März übernachtet?") == "German"
    assert foreign_language("Где мы остановились в марте?") == "Cyrillic script"
    for english in (
        "Where do we sleep in March?",
        "What did Ana and José decide about the casa in Valencia?",
        "wher do we slep in mrach",
        "kubectl rollout restart deployment",
        "Why does get_user_by_id return None in prod?",
    ):
        assert foreign_language(english) is None, english
