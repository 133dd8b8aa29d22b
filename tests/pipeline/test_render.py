"""The recall text an agent reads (pipeline/render.py): times of day shown where they change,
and the price truncation pays for each passage."""

from __future__ import annotations

import re

from factories import make_passage
from hypothesis import given, settings
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.render import RenderedCost, render_recall
from smartsearch_mcp.pipeline.truncate import truncate_to_budget
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import Candidate, Scored

COUNTER = get_token_counter()


def _scored(turn_id: int, text: str, timestamp: str, session: str = "trip") -> Scored:
    passage = make_passage(
        turn_id, text, speaker="Dana", session_id=session, timestamp=timestamp, position=turn_id
    )
    return Scored(Candidate(passage, lexical_score=1.0), score=1.0 / turn_id)


def _lines(text: str) -> list[str]:
    """The passage lines of a recall's text (not the summary, headings or notes)."""
    return [line for line in text.splitlines() if re.search(r"^(\[\d\d:\d\d\] )?\S+ #\d+: ", line)]


def test_a_time_shared_by_the_lines_under_a_heading_is_shown_once() -> None:
    passages = [
        _scored(1, "We booked the flights to Porto.", "2026-02-03T18:05:00"),
        _scored(2, "The Airbnb is near the river.", "2026-02-03T18:05:00"),
        _scored(3, "Check-in is at 3 pm.", "2026-02-03T18:05:00"),
    ]

    text = render_recall("trip", passages, 100)

    assert text.splitlines()[:3] == [
        "3 passages from 1 session (100 tokens; every match returned).",
        "",
        "## Session trip — 2026-02-03",
    ]
    assert _lines(text) == [
        "[18:05] Dana #1: We booked the flights to Porto.",
        "Dana #2: The Airbnb is near the river.",
        "Dana #3: Check-in is at 3 pm.",
    ]


def test_a_line_shows_its_time_when_it_differs_from_the_line_above() -> None:
    passages = [
        _scored(1, "Leaving now.", "2026-02-03T18:05:00"),
        _scored(2, "Landed.", "2026-02-03T21:40:00"),
        _scored(3, "At the Airbnb.", "2026-02-03T21:40:00"),
        _scored(4, "Out for dinner.", "2026-02-03T22:15:00"),
    ]

    lines = _lines(render_recall("trip", passages, 100))

    assert [line.partition("Dana")[0] for line in lines] == ["[18:05] ", "[21:40] ", "", "[22:15] "]


def test_each_heading_shows_its_first_time_again() -> None:
    passages = [
        _scored(1, "Planning the trip.", "2026-01-10T09:00:00", session="plans"),
        _scored(2, "Booked it.", "2026-01-10T09:00:00", session="booking"),
    ]

    lines = _lines(render_recall("trip", passages, 100))

    assert all(line.startswith("[09:00] ") for line in lines)


def test_a_passage_sharing_a_kept_time_costs_its_line_without_the_time() -> None:
    first = _scored(1, "We booked the flights to Porto.", "2026-02-03T18:05:00")
    same_time = _scored(2, "The Airbnb is near the river.", "2026-02-03T18:05:00")
    later = _scored(3, "The Airbnb is near the river.", "2026-02-03T19:30:00")
    cost = RenderedCost(COUNTER, "trip")
    cost.add(first)

    assert cost.cost(same_time) == COUNTER.count("\nDana #2: The Airbnb is near the river.")
    assert cost.cost(later) == COUNTER.count("\n[19:30] Dana #3: The Airbnb is near the river.")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),  # session
            st.sampled_from(["2026-02-03T18:05:00", "2026-02-03T19:30:00", "2026-02-04T08:00:00"]),
            st.text("abc de", min_size=1, max_size=40),
        ),
        min_size=1,
        max_size=25,
    ),
    st.integers(min_value=60, max_value=400),
)
def test_the_rendered_text_never_exceeds_the_budget_whatever_the_times(
    turns: list[tuple[str, str, str]], max_tokens: int
) -> None:
    passages = [
        _scored(i + 1, text, stamp, session=session)
        for i, (session, stamp, text) in enumerate(turns)
    ]
    cost = RenderedCost(COUNTER, "trip")

    kept = truncate_to_budget(passages, max_tokens, COUNTER, 0, 0.0, cost=cost)

    text = render_recall("trip", kept.kept, max_tokens)
    assert COUNTER.count(text) <= max_tokens
    assert kept.tokens_used <= max_tokens


def test_a_recall_cut_by_confidence_names_the_confidence_where_it_stopped() -> None:
    """The summary says whose number it prints: the confidence of the best passage left out
    (the best's is 1.00), not a bare figure in brackets."""
    passages = [_scored(1, "We booked the flights to Porto.", "2026-02-03T18:05:00")]

    text = render_recall("trip", passages, 100, stop_reason="threshold", score_at_cut=0.004)
    stopped = render_recall("trip", passages, 100, stop_reason="threshold", score_at_cut=-0.001)

    assert text.splitlines()[0] == (
        "1 passage from 1 session (100 tokens; stopped at confidence 0.00, well below the best's)."
    )
    assert stopped.splitlines()[0] == text.splitlines()[0]  # never "-0.00"


def test_sessions_come_in_time_order_whatever_their_rank() -> None:
    """docs/reference.md: the text shows sessions oldest first, so the best passage (first in
    `passages`) can come below a lesser one from an earlier session."""
    best_but_later = _scored(1, "We decided the schema keeps emails apart.", "2026-02-03T18:05:00")
    earlier = _scored(2, "Which port is staging on?", "2026-01-10T09:00:00", session="ports")

    text = render_recall("schema", [best_but_later, earlier], 100)

    assert [line for line in text.splitlines() if line.startswith("## ")] == [
        "## Session ports — 2026-01-10",
        "## Session trip — 2026-02-03",
    ]
