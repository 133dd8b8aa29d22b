"""Everything that reads stored text or a question takes time linear in its length: each
text-reading function, over a megabyte of text crafted against its patterns (a run of
capitals after "my sister", a base64 blob, separators, dates, names), finishes in seconds,
and so does a whole recall over such turns. A pattern that backtracks catastrophically
takes hours on these (one did: "my sister " and 20,000 capitals took 7 s, quadratic), so
the bounds below, tens of times what the code needs, catch it without timing anything
finer."""

from __future__ import annotations

import contextlib
import random
import signal
import string
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from factories import make_passage, make_turn

from smartsearch_mcp import dates
from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.pipeline import analyze, passages, relations, spelling, words
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import TurnInput

SIZE = 1_000_000
SECONDS = 30  # per call; the slowest measured is about 2 s on a shared 2-core machine


def _crafted() -> dict[str, str]:
    rnd = random.Random(0)
    blob = "".join(rnd.choice(string.ascii_letters + string.digits + "+/") for _ in range(SIZE))
    return {
        "capitals after a relation": "my sister " + "A" * SIZE,
        "capitals before a relation": "A" * SIZE + ", my sister",
        "base64 blob": "my sister " + blob,
        "capitalised words": "Ilka Lee " * (SIZE // 9),
        "names in commas": "Ilka, " * (SIZE // 6),
        "relation modifiers": "my " + "older " * (SIZE // 6),
        "date separators": "1/" * (SIZE // 2),
        "iso date pieces": "2024-" * (SIZE // 5),
        "month names": "March " * (SIZE // 6),
        "relative dates": "2 days ago last " * (SIZE // 16),
        "clock times": "12:" * (SIZE // 3),
        "spaces": "a" + " " * SIZE + "b",
        "lines": "a\n" * (SIZE // 2),
        "apostrophes": "'" * SIZE,
        "dots": "." * SIZE,
    }


CRAFTED = _crafted()
REFERENCE = datetime(2024, 5, 1, tzinfo=UTC)

READERS: dict[str, Callable[[str], object]] = {
    "dates.find_time_range": lambda text: dates.find_time_range(text, REFERENCE),
    "dates.mentioned_ranges": lambda text: dates.mentioned_ranges(text, REFERENCE),
    "words.tokenize_words": words.tokenize_words,
    "words.distinct_words": words.distinct_words,
    "words.sanitize_text": words.sanitize_text,
    "analyze.extract_entities_rules": analyze.extract_entities_rules,
    "passages.split_into_passages": lambda text: passages.split_into_passages(
        make_turn(1, text), 200, 20
    ),
    "passages.sentence_spans": passages.sentence_spans,
    "passages.asks_only": passages.asks_only,
    "spelling.memory_words": lambda text: spelling.memory_words([text.lower()]),
    "relations.relation_names": lambda text: relations.relation_names(
        ["sister"], [make_passage(1, text)], [text.lower()]
    ),
    "relations.relations_of": lambda text: relations.relations_of(
        ["ilka", "aaaa"], [make_passage(1, text)], [text.lower()]
    ),
    "relations.may_name_a_relation": lambda text: relations.may_name_a_relation(text.lower()),
}


class _TooSlow(Exception):
    pass


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail when the block runs longer than `seconds` (a regex is interrupted too)."""
    if not hasattr(signal, "setitimer"):
        pytest.skip("needs SIGALRM")

    def stop(*_: object) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _TooSlow:
        pytest.fail(f"still running after {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.slow
@pytest.mark.parametrize("reader", sorted(READERS))
def test_each_text_reader_is_linear_on_a_megabyte_of_crafted_text(reader: str) -> None:
    read = READERS[reader]
    for text in CRAFTED.values():
        with within(SECONDS):
            read(text)


def test_a_question_word_of_ten_thousand_letters_is_not_looked_up(monkeypatch) -> None:
    built: list[int] = []
    one_edit = spelling.one_edit
    monkeypatch.setattr(
        spelling, "one_edit", lambda word: built.append(len(word)) or one_edit(word)
    )
    words = frozenset({"denver", "sister"})
    known = spelling.KnownWords(get_token_counter("o200k_base"))
    question = "my sister " + "a" * 10_000 + " denvr"
    assert spelling.corrected_question(question, words, known).endswith(" denver")
    assert built == [5]  # "denvr" only: "sister" is known and stored, the long word skipped


def test_a_question_of_thousands_of_words_looks_up_at_most_max_lookups(monkeypatch) -> None:
    built: list[str] = []
    one_edit = spelling.one_edit
    monkeypatch.setattr(spelling, "one_edit", lambda word: built.append(word) or one_edit(word))
    rnd = random.Random(1)
    question = " ".join(
        "".join(rnd.choice("bcdfghjklmnpqrstvwxz") for _ in range(8)) for _ in range(2_000)
    )
    known = spelling.KnownWords(get_token_counter("o200k_base"))
    spelling.corrected_question(question, frozenset({"denver"}), known)
    assert 0 < len(built) <= spelling.MAX_LOOKUPS


def test_relations_of_reads_each_passage_once_for_all_the_names(monkeypatch) -> None:
    read: list[str] = []
    matches = relations._matches
    monkeypatch.setattr(
        relations, "_matches", lambda text, patterns: read.append(text) or matches(text, patterns)
    )
    names = ["name7", "ilka"] + [f"name{i}" for i in range(100)] + ["tom"]
    text = "I met Ilka, my sister, with name7. Tom, my boss, too."
    found = relations.relations_of(names, [make_passage(1, text)], [text.lower()])
    # only the first MAX_NAMES_LOOKED_UP distinct names are looked up: "tom" is past them
    assert [(r.relation, r.name) for r in found] == [("sister", "ilka")]
    assert len(read) == 1


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_recall_over_crafted_megabyte_turns_answers_in_seconds(tmp_path: Path) -> None:
    config_file = tmp_path / "lexical.toml"
    config_file.write_text(
        '[nlp]\nspacy_models = []\n[retrieval]\ndense = false\n[rank]\nscorers = ["lexical"]\n'
    )
    memory = await Memory.open(Config.load(config_file), tmp_path / "m.db", "ns")
    try:
        limit = memory.config.store.max_text_chars
        for text in CRAFTED.values():
            await memory.remember([TurnInput(text=text[:limit])])
        await memory.remember([TurnInput(text="my sister Ilka moved to Graz in March 2024")])
        questions = [
            "Which city is my sister in?",
            "What did Ilka do in March 2024?",
            "what happened 2 days ago?",
            ("my sister " + CRAFTED["base64 blob"])[:9_000],
            ("my sister " + "A" * SIZE)[:9_000],
        ]
        for question in questions:
            with anyio.fail_after(SECONDS):
                await memory.recall(question)
        # the crafted turns repeat "my sister" a million times, so they may rightly win that
        # question; a question they do not match still finds its turn among them
        result = await memory.recall("Where did Ilka move?")
        assert any("Graz" in s.candidate.passage.text for s in result.passages)
    finally:
        await memory.close()
