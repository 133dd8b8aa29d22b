"""Splitting long turns into passages that are exact slices of the turn."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.pipeline.passages import (
    _BOUNDARY_RE,
    _WORD_RE,
    _word_count,
    asks_only,
    asks_question,
    may_split,
    sentence_spans,
    split_into_passages,
)
from smartsearch_mcp.types import Passage, Turn


def make_turn(text: str) -> Turn:
    return Turn(
        id=7,
        namespace="default",
        session_id="s1",
        position=0,
        speaker="assistant",
        role="assistant",
        text=text,
        timestamp=None,
        timestamp_raw=None,
        created_at="2024-01-01T00:00:00Z",
        metadata={},
    )


def spans(passages: list[Passage]) -> list[tuple[int, int]]:
    return [(p.start, p.end) for p in passages]


def test_a_short_turn_is_one_passage() -> None:
    turn = make_turn("I painted a sunset yesterday.")
    assert split_into_passages(turn, max_words=10, overlap_words=2) == [
        Passage(turn=turn, start=0, end=len(turn.text))
    ]


def test_an_empty_turn_is_one_empty_passage() -> None:
    turn = make_turn("")
    assert spans(split_into_passages(turn, 5, 1)) == [(0, 0)]


def test_long_turns_split_on_sentences_with_overlap() -> None:
    text = " ".join(f"Sentence {i} has six words." for i in range(6))
    # each sentence is 5 words; windows of 12 words hold 2 sentences, overlap 1 sentence
    passages = split_into_passages(make_turn(text), max_words=12, overlap_words=5)
    assert [p.text for p in passages] == [
        "Sentence 0 has six words. Sentence 1 has six words. ",
        "Sentence 1 has six words. Sentence 2 has six words. ",
        "Sentence 2 has six words. Sentence 3 has six words. ",
        "Sentence 3 has six words. Sentence 4 has six words. ",
        "Sentence 4 has six words. Sentence 5 has six words.",
    ]


def test_without_overlap_windows_tile_the_text() -> None:
    text = " ".join(f"Sentence {i} has six words." for i in range(4))
    passages = split_into_passages(make_turn(text), max_words=10, overlap_words=0)
    assert spans(passages) == [(0, 52), (52, 103)]


def test_paragraphs_and_list_lines_are_boundaries() -> None:
    text = "Intro line here.\n\nFirst point is long\n- item one\n- item two\nlast words"
    passages = split_into_passages(make_turn(text), max_words=6, overlap_words=0)
    # units of 3, 4, 3, 3 and 2 words ("-" is a word), packed into windows of 6
    assert [p.text for p in passages] == [
        "Intro line here.\n\n",
        "First point is long\n",
        "- item one\n- item two\n",
        "last words",
    ]


def test_a_sentence_longer_than_a_window_is_split_between_words() -> None:
    text = "one two three four five six seven"
    passages = split_into_passages(make_turn(text), max_words=3, overlap_words=1)
    assert [p.text for p in passages] == [
        "one two three ",
        "three four five ",
        "five six seven",
    ]


@pytest.mark.parametrize(("max_words", "overlap"), [(0, 0), (5, 5), (5, -1), (3, 7)])
def test_invalid_window_settings_are_rejected(max_words: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap_words < max_words"):
        split_into_passages(make_turn("a b c"), max_words, overlap)


TEXT = st.lists(
    st.one_of(
        st.sampled_from(["word", "Caroline", "3.5", "end.", "why?", "wow!", "\n", "\n\n", "- ",
                         "😀", "שלום", "\x00", "  ", "\t", "”", "a.", "…"]),
        st.text(max_size=8),
    ),
    max_size=80,
).map(" ".join)  # fmt: skip


@given(TEXT, st.integers(min_value=1, max_value=20), st.integers(min_value=0, max_value=19))
def test_passages_are_exact_ordered_slices_covering_the_text(
    text: str, max_words: int, overlap: int
) -> None:
    overlap = min(overlap, max_words - 1)
    turn = make_turn(text)
    passages = split_into_passages(turn, max_words, overlap)
    assert passages and passages[0].start == 0 and passages[-1].end == len(text)
    for previous, current in itertools.pairwise(passages):
        assert previous.start < current.start <= previous.end  # ordered, no gaps
        assert current.end > previous.end  # each passage adds text
    for passage in passages:
        assert passage.text == text[passage.start : passage.end]
        assert len(passage.text.split()) <= max_words
    assert split_into_passages(turn, max_words, overlap) == passages


def test_sentence_spans_are_the_sentences_and_lines_of_a_text() -> None:
    text = "Hi there. How are you? Fine!\nNew line"
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Hi there. ",
        "How are you? ",
        "Fine!\n",
        "New line",
    ]
    assert sentence_spans("") == []


@given(TEXT)
def test_sentence_spans_tile_the_text_in_order(text: str) -> None:
    spans = sentence_spans(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert all(a < b for a, b in spans)
    assert all(p[1] == c[0] for p, c in itertools.pairwise(spans))


@given(st.text(alphabet=st.sampled_from("ab \n\t."), max_size=80), st.integers(1, 40))
def test_a_text_too_short_to_split_never_holds_more_words_than_a_passage(
    text: str, max_words: int
) -> None:
    if not may_split(text, max_words):
        assert len(text.split()) <= max_words
        assert split_into_passages(make_turn(text), max_words, 0) == [
            Passage(turn=make_turn(text), start=0, end=len(text))
        ]


# The unit boundaries as first defined: after a sentence end (look-behind) or around a line
# break. The faster pattern in use must end its matches at the same places.
_REFERENCE_BOUNDARY = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\s*\n\s*")


@given(st.text(alphabet=list("ab .!?…\"'”’)]\n\t\r\x0c\u2028\x85\xa0"), max_size=40))
def test_unit_boundaries_end_where_the_reference_definition_ends_them(text: str) -> None:
    ends = [m.end() for m in _BOUNDARY_RE.finditer(text)]
    assert ends == [m.end() for m in _REFERENCE_BOUNDARY.finditer(text)]


@given(st.text(max_size=60))
def test_words_are_counted_as_the_word_pattern_finds_them(text: str) -> None:
    assert _word_count(text) == len(_WORD_RE.findall(text))


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Should the export also include archived projects?", True),
        ("The Crooked Spoon?? 🙏", True),  # a trailing emoji is no statement
        ('"Really?"', True),
        ("Which table?\nThe window or the corner one?", True),
        ("Noted. Shall I add it to the checklist?", False),
        ("Would you like more? I can help.", False),
        ("Sure. Which one?\nThe red one.", False),
        ("?", False),
        ("", False),
    ],
)
def test_asks_only_when_every_worded_sentence_is_a_question(text: str, asks: bool) -> None:
    assert asks_only(text) is asks


def _asks_only_by_every_sentence(text: str) -> bool:
    worded = [
        text[start:end].rstrip().rstrip("\"'”’)]")
        for start, end in sentence_spans(text)
        if re.search(r"\w", text[start:end])
    ]
    return bool(worded) and all(s.endswith("?") for s in worded)


@given(st.text(alphabet=st.sampled_from(list("ab ?.!\n\"')]…_9é🙏")), max_size=30))
def test_asks_only_agrees_with_reading_every_sentence(text: str) -> None:
    assert asks_only(text) == _asks_only_by_every_sentence(text)


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("how do I rebuild the search index again", True),
        ("Why did the worker have to leave the old queue", True),
        ("the build breaks on startup. any idea why?", False),
        ("any idea why the build breaks on startup?", True),
        ("What changed? Why now?", True),
        ("What a day. The deploy finally went out.", False),
        ("the font is missing in the printed report??", True),
        ("Could you note that my uncle's wedding is June 8? He's marrying Petra.", False),
        ("Met with Bram, we agreed I'll run the onboarding survey", False),
        ("go with the second one", False),
        ("use port 7443", False),
        ("", False),
        ("?!", False),
    ],
)
def test_asks_question_when_it_only_asks_by_its_marks_or_its_opening_wh_word(
    text: str, asks: bool
) -> None:
    assert asks_question(text) is asks
