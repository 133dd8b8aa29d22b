"""Score-adaptive truncation to a token budget, priced as production prices it: by the
rendered recall text (`RenderedCost`: the first line, each passage's line, each session's
heading), so that the budget bounds what the agent receives."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from factories import make_passage
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.rank import ranking_confidence
from smartsearch_mcp.pipeline.render import RenderedCost, render_recall
from smartsearch_mcp.pipeline.truncate import Truncation, truncate_to_budget
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import Candidate, Scored

QUERY = "what did we say?"


class WordCounter:
    """One token per whitespace-separated word."""

    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())


class CharCounter:
    """One token per character."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


WORDS = WordCounter()


def make_scored(text: str, score: float, turn_id: int = 1, session: str = "s1") -> Scored:
    passage = make_passage(turn_id, text, session_id=session)
    return Scored(candidate=Candidate(passage=passage, lexical_score=1.0), score=score)


def ranked(*items: tuple[int, float]) -> list[Scored]:
    """Passages of n words with the given scores, in the given (descending) order."""
    return [make_scored(" ".join(["w"] * n), s, turn_id=i) for i, (n, s) in enumerate(items)]


def truncate(
    scored: list[Scored],
    max_tokens: int,
    top_k: int = 0,
    alpha: float = 0.0,
    min_passages: int = 1,
    counter: TokenCounter = WORDS,
) -> Truncation:
    """Truncation as recall runs it, with no top-k limit and no threshold unless given."""
    cost = RenderedCost(counter, QUERY)
    return truncate_to_budget(scored, max_tokens, counter, top_k, alpha, min_passages, cost=cost)


def text_of(kept: Sequence[Scored], budget: int, counter: TokenCounter = WORDS) -> int:
    """What truncation charges for showing `kept` at `budget`, passage by passage: the
    text's fixed part (its first line at its longest), then each passage's line and, when
    it opens a session's day, its heading. At least the whole text's count (the property
    test below checks the text as rendered)."""
    cost = RenderedCost(counter, QUERY)
    total = cost.fixed(budget)
    for item in kept:
        total += cost.cost(item)
        cost.add(item)
    return total


def test_nothing_in_gives_nothing_out() -> None:
    result = truncate([], 100)
    assert (result.kept, result.score_at_cut, result.reason) == ([], None, "exhausted")
    assert result.tokens_used == WORDS.count(render_recall(QUERY, [], 0))


def test_everything_fits_when_the_budget_allows() -> None:
    items = ranked((3, 0.9), (4, 0.5))
    result = truncate(items, 100)
    assert (result.kept, result.score_at_cut, result.reason) == (items, None, "exhausted")
    assert result.tokens_used <= text_of(items, 100)


def test_top_k_limits_the_number_of_passages() -> None:
    items = ranked((1, 0.9), (1, 0.8), (1, 0.7), (1, 0.6))
    result = truncate(items, 100, top_k=2)
    assert (result.kept, result.score_at_cut, result.reason) == (items[:2], 0.7, "top_k")


def test_passages_below_alpha_times_best_are_cut() -> None:
    items = ranked((1, 10.0), (1, 6.0), (1, 4.0), (1, 3.0))
    result = truncate(items, 100, alpha=0.5)
    assert (result.kept, result.score_at_cut, result.reason) == (items[:2], 4.0, "threshold")


def test_min_passages_are_exempt_from_the_threshold() -> None:
    items = ranked((1, 10.0), (1, 5.0), (1, 4.0))
    result = truncate(items, 100, alpha=0.9, min_passages=2)
    assert result.kept == items[:2] and result.reason == "threshold"


def test_the_threshold_is_off_when_the_best_score_is_not_positive() -> None:
    items = ranked((1, -1.0), (1, -2.0), (1, -30.0))
    assert truncate(items, 100, alpha=0.5).kept == items
    items = ranked((1, 0.0), (1, 0.0))
    assert truncate(items, 100, alpha=0.5).kept == items


def test_a_passage_that_does_not_fit_is_skipped_and_shorter_ones_still_fill() -> None:
    items = ranked((4, 0.9), (40, 0.8), (3, 0.7), (50, 0.6))
    budget = text_of([items[0], items[2]], 200)
    result = truncate(items, budget)
    assert (result.kept, result.score_at_cut, result.reason) == (
        [items[0], items[2]],
        0.8,
        "budget",
    )
    assert result.tokens_used <= budget


def test_a_full_budget_stops_the_scan() -> None:
    items = ranked((4, 0.9), (3, 0.8), (2, 0.7))
    budget = text_of(items[:2], 200)
    result = truncate(items, budget)
    assert (result.kept, result.score_at_cut, result.reason) == (items[:2], 0.7, "budget")


def test_a_passage_opening_a_session_pays_for_its_heading() -> None:
    # Two passages of one session fit where the same two from two sessions do not.
    same = [make_scored("w w w", 0.9, 1), make_scored("w w w", 0.8, 2)]
    apart = [make_scored("w w w", 0.9, 1), make_scored("w w w", 0.8, 2, session="s2")]
    budget = text_of(same, 200)
    assert truncate(same, budget).kept == same
    result = truncate(apart, budget)
    assert result.kept == apart[:1] and result.reason == "budget"
    assert text_of(apart, 200) > budget


def test_a_best_passage_longer_than_the_budget_is_cut_at_a_word_boundary() -> None:
    text = "one two three four five six seven eight"
    items = [make_scored(text, 0.9), make_scored("short", 0.5, turn_id=2)]
    budget = text_of([make_scored("one two three four five", 0.9)], 200)
    result = truncate(items, budget)
    assert result.clipped and result.reason == "budget"
    assert result.tokens_used <= budget and result.score_at_cut == 0.5
    (kept,) = result.kept
    assert kept.candidate.passage.text == "one two three four five"
    assert kept.candidate.passage.start == 0 and kept.candidate.passage.end == 23
    assert kept.score == 0.9 and kept.candidate.passage.turn is items[0].candidate.passage.turn


def test_a_first_word_longer_than_the_budget_is_cut_between_characters() -> None:
    chars = CharCounter()
    items = [make_scored("abcdefghij klm", 1.0)]
    budget = text_of([make_scored("abcd", 1.0)], 200, chars)
    result = truncate(items, budget, counter=chars)
    assert result.kept[0].candidate.passage.text == "abcd"
    assert result.tokens_used <= budget and result.clipped


def test_a_budget_with_room_for_no_passage_keeps_nothing() -> None:
    items = ranked((2, 0.9))
    budget = text_of([], 200)
    result = truncate(items, budget)
    assert (result.kept, result.score_at_cut, result.reason) == ([], 0.9, "budget")


TEXTS = st.lists(
    st.sampled_from(["Caroline", "painted", "a", "sunset", "😀", "שלום", "\n", "3.5", "don't",
                     "https://example.com/x?y=1", "\x00", "ok.", "—"]),
    min_size=0,
    max_size=120,
).map(" ".join)  # fmt: skip


@st.composite
def scored_lists(draw: st.DrawFn) -> list[Scored]:
    texts = draw(st.lists(TEXTS, max_size=12))
    scores = sorted(
        draw(st.lists(st.floats(-5, 5), min_size=len(texts), max_size=len(texts))), reverse=True
    )
    return [
        make_scored(t, s, turn_id=i) for i, (t, s) in enumerate(zip(texts, scores, strict=True))
    ]


@pytest.fixture(scope="module")
def counters() -> dict[str, TokenCounter]:
    """Loaded once: the BPE vocabulary takes about a second."""
    return {name: get_token_counter(name) for name in ("o200k_base", "estimate")}


@given(
    scored_lists(),
    st.integers(min_value=16, max_value=400),
    st.integers(min_value=0, max_value=8),
    st.floats(0, 1),
    st.sampled_from(["o200k_base", "estimate"]),
)
def test_the_budget_is_never_exceeded(
    counters: dict[str, TokenCounter],
    items: list[Scored],
    max_tokens: int,
    top_k: int,
    alpha: float,
    tokenizer: str,
) -> None:
    counter = counters[tokenizer]
    cost = RenderedCost(counter, QUERY)
    confidence = ranking_confidence(items)  # the threshold's values, as recall gives them
    result = truncate_to_budget(
        items, max_tokens, counter, top_k, alpha, cost=cost, confidence=confidence
    )
    # What the agent receives: the recall text as rendered with the real count and reason.
    shown = render_recall(
        QUERY, result.kept, result.tokens_used, (), (), result.reason, result.score_at_cut
    )
    assert counter.count(shown) <= result.tokens_used <= max_tokens
    if items and text_of(items[:1], max_tokens, counter) <= max_tokens:
        assert result.kept, "the best passage fits, so something is returned"
    if top_k:
        assert len(result.kept) <= top_k
    if result.clipped:
        (kept,) = result.kept
        original = items[0].candidate.passage
        assert original.text.startswith(kept.candidate.passage.text)
    else:
        positions = [items.index(s) for s in result.kept]
        assert positions == sorted(positions)
