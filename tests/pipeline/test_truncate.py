"""Score-adaptive truncation to a token budget."""

from __future__ import annotations

import pytest
from factories import make_passage
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.truncate import Truncation, truncate_to_budget
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import Candidate, Scored


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


def make_scored(text: str, score: float, turn_id: int = 1) -> Scored:
    passage = make_passage(turn_id, text)
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
    overhead_tokens: int = 0,
) -> Truncation:
    """Truncation counting words, with no top-k limit and no threshold unless given."""
    return truncate_to_budget(
        scored, max_tokens, WORDS, top_k, alpha, min_passages, overhead_tokens=overhead_tokens
    )


def test_nothing_in_gives_nothing_out() -> None:
    assert truncate([], 100) == Truncation(
        kept=[], tokens_used=0, score_at_cut=None, reason="exhausted"
    )


def test_everything_fits_when_the_budget_allows() -> None:
    items = ranked((3, 0.9), (4, 0.5))
    assert truncate(items, 100) == Truncation(
        kept=items, tokens_used=7, score_at_cut=None, reason="exhausted"
    )


def test_top_k_limits_the_number_of_passages() -> None:
    items = ranked((1, 0.9), (1, 0.8), (1, 0.7), (1, 0.6))
    assert truncate(items, 100, top_k=2) == Truncation(
        kept=items[:2], tokens_used=2, score_at_cut=0.7, reason="top_k"
    )


def test_passages_below_alpha_times_best_are_cut() -> None:
    items = ranked((1, 10.0), (1, 6.0), (1, 4.0), (1, 3.0))
    assert truncate(items, 100, alpha=0.5) == Truncation(
        kept=items[:2], tokens_used=2, score_at_cut=4.0, reason="threshold"
    )


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
    items = ranked((4, 0.9), (8, 0.8), (3, 0.7), (5, 0.6))
    assert truncate(items, 10) == Truncation(
        kept=[items[0], items[2]], tokens_used=7, score_at_cut=0.8, reason="budget"
    )


def test_a_full_budget_stops_the_scan() -> None:
    items = ranked((4, 0.9), (3, 0.8), (2, 0.7))
    assert truncate(items, 7) == Truncation(
        kept=items[:2], tokens_used=7, score_at_cut=0.7, reason="budget"
    )


def test_overhead_tokens_are_charged_per_passage() -> None:
    items = ranked((3, 0.9), (3, 0.8), (3, 0.7))
    result = truncate(items, 10, overhead_tokens=2)
    assert result.kept == items[:2] and result.tokens_used == 10 and result.reason == "budget"


def test_a_best_passage_longer_than_the_budget_is_cut_at_a_word_boundary() -> None:
    text = "one two three four five six seven eight"
    items = [make_scored(text, 0.9), make_scored("short", 0.5, turn_id=2)]
    result = truncate(items, 5)
    assert result.clipped and result.reason == "budget"
    assert result.tokens_used == 5 and result.score_at_cut == 0.5
    (kept,) = result.kept
    assert kept.candidate.passage.text == "one two three four five"
    assert kept.candidate.passage.start == 0 and kept.candidate.passage.end == 23
    assert kept.score == 0.9 and kept.candidate.passage.turn is items[0].candidate.passage.turn


def test_clipping_leaves_room_for_the_overhead() -> None:
    items = [make_scored("one two three four five six", 0.9)]
    result = truncate(items, 5, overhead_tokens=2)
    assert result.kept[0].candidate.passage.text == "one two three"
    assert result.tokens_used == 5


def test_a_first_word_longer_than_the_budget_is_cut_between_characters() -> None:
    items = [make_scored("abcdefghij klm", 1.0)]
    result = truncate_to_budget(items, 4, CharCounter(), top_k=0, alpha=0.0)
    assert result.kept[0].candidate.passage.text == "abcd"
    assert result.tokens_used == 4 and result.clipped


def test_a_budget_too_small_for_anything_keeps_nothing() -> None:
    items = ranked((2, 0.9))
    assert truncate(items, 0) == Truncation(
        kept=[], tokens_used=0, score_at_cut=0.9, reason="budget"
    )


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
    st.integers(min_value=0, max_value=5),
    st.sampled_from(["o200k_base", "estimate"]),
)
def test_the_budget_is_never_exceeded(
    counters: dict[str, TokenCounter],
    items: list[Scored],
    max_tokens: int,
    top_k: int,
    alpha: float,
    overhead: int,
    tokenizer: str,
) -> None:
    counter = counters[tokenizer]
    result = truncate_to_budget(items, max_tokens, counter, top_k, alpha, overhead_tokens=overhead)
    assert result.tokens_used <= max_tokens
    assert result.tokens_used == sum(
        counter.count(s.candidate.passage.text) + overhead for s in result.kept
    )
    if items:
        assert result.kept, "something matched, so something is returned"
    if top_k:
        assert len(result.kept) <= top_k
    if result.clipped:
        (kept,) = result.kept
        original = items[0].candidate.passage
        assert original.text.startswith(kept.candidate.passage.text)
    else:
        positions = [items.index(s) for s in result.kept]
        assert positions == sorted(positions)
