"""Recall an agent can rely on, end to end over a real SQLite store with the lexical rankers:
the budget bounds the text the agent receives, a query with no content returns nothing,
a question about a date range ranks turns from that range first, a question in another
language is flagged."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from given_models import GivenModels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.config import Config
from smartsearch_mcp.output import format_recall, recall_output
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))
COUNTER = get_token_counter("o200k_base")
NOW = datetime(2026, 11, 30, 18, 0)  # a Monday: "last week" is 23-30 November


def _pipeline(store: SQLiteStore, **truncation: Any) -> RecallPipeline:
    config = Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False},
        rank={"scorers": ["lexical"]},
        truncation=truncation,
    )
    return RecallPipeline(store, config, GivenModels())  # type: ignore[arg-type]


@pytest.fixture
async def store(tmp_path):
    s = await SQLiteStore.open(tmp_path / "m.db")
    yield s
    await s.close()


# A few sessions over weeks: a trip planned for Ljubljana then moved to Piran, a cat, a job.
SESSIONS: list[tuple[str, str, list[str]]] = [
    (
        "s1",
        "2026-10-26T19:05:00",
        [
            "I resigned from Fernhill Press today, my last day is November 13.",
            "Anselm and I are planning a trip in March, we decided on Ljubljana.",
            "Pilchard, my tabby, needs a scratching post before winter.",
        ],
    ),
    (
        "s2",
        "2026-11-10T08:40:00",
        [
            "The vet said Pilchard cracked a tooth, soft food for ten days.",
            "We decided to keep the budget for the trip under 900 euros.",
        ],
    ),
    (
        "s3",
        "2026-11-25T20:30:00",
        [
            "The night train to Ljubljana stops in winter, so we moved the March trip to Piran.",
            "We rented a flat in Piran by Tartini Square for March 4 to 10.",
            "Pilchard is eating dry food again, the tooth healed.",
        ],
    ),
]


async def _remember(store: SQLiteStore) -> None:
    for session_id, start, texts in SESSIONS:
        day = start[:10]
        turns = [
            TurnInput(text, "Wren", "user", timestamp=f"{day}T{19 + i:02d}:00:00")
            for i, text in enumerate(texts)
        ]
        await store.remember("ns", session_id, turns)


async def test_the_returned_text_stays_within_max_tokens(store):
    """The text the agent receives (headings, dates, speakers, turn ids included) — not
    only the passages' words — fits the budget."""
    many = [
        TurnInput(
            f"We talked about the hiking trip to the Alps, day {i}.",
            f"Speaker{i % 3}",
            timestamp=f"2026-0{1 + i % 9}-1{i % 10}T10:00:00",
        )
        for i in range(60)
    ]
    await store.remember("ns", "hikes", many)
    pipeline = _pipeline(store)
    for budget in (150, 300, 700):
        result = await pipeline.recall("hiking trip Alps", SCOPE, budget, NOW)
        text = format_recall("hiking trip Alps", result)
        assert result.passages
        assert COUNTER.count(text) <= budget
        assert result.tokens_used <= budget
        assert result.stop_reason == "budget"


FIXTURE_OK = [HealthCheck.function_scoped_fixture]


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    texts=st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=25),
    budget=st.integers(min_value=100, max_value=900),
)
async def test_the_rendered_text_never_exceeds_the_budget(tmp_path_factory, texts, budget):
    path = tmp_path_factory.mktemp("prop") / "m.db"
    store = await SQLiteStore.open(path)
    try:
        turns = [
            TurnInput(f"trip {text}", f"P{i % 4}", timestamp=f"2026-0{1 + i % 9}-0{1 + i % 9}")
            for i, text in enumerate(texts)
        ]
        await store.remember("ns", "s", turns)
        pipeline = _pipeline(store)
        result = await pipeline.recall("trip", SCOPE, budget, NOW)
        assert COUNTER.count(format_recall("trip", result)) <= budget
    finally:
        await store.close()


@pytest.mark.parametrize(
    "query", ["?", "...", "hmm", "hmmm", "so what about it?", "and it was the one"]
)
async def test_a_query_with_no_content_returns_nothing_and_says_so(store, query):
    await _remember(store)
    result = await _pipeline(store).recall(query, SCOPE, 1500, NOW)
    assert result.passages == []
    assert any("names nothing to search for" in w for w in result.warnings)
    assert "names nothing to search for" in format_recall(query, result)


@pytest.mark.parametrize(
    "query",
    [
        *("2", "+1", "ack", "remind me", "show", "go", "go ahead", "ok, continue", "lgtm"),
        *("any updates?", "what's new?", "status", "any news"),
    ],
)
async def test_a_vote_an_option_a_bare_request_verb_go_on_or_news_returns_nothing(store, query):
    # each of these words is in memory: still nothing was asked for
    turns = [
        TurnInput(text, "Wren", "user", timestamp=f"2026-11-2{i}T10:00:00")
        for i, text in enumerate(
            [
                "Option 2 is the cheaper ferry, option 1 the faster one.",
                "Ack, remind me to show Ines the +1 on the booking.",
                "We go ahead with the ferry unless the lgtm from Ines says otherwise; continue.",
                "News: the new status page shows the latest update to the ferry times.",
            ]
        )
    ]
    await store.remember("ns", "s", turns)
    result = await _pipeline(store).recall(query, SCOPE, 1500, NOW)
    assert result.passages == []
    assert any("names nothing to search for" in w for w in result.warnings)
    # with something to look for, the same words find it
    found = await _pipeline(store).recall(f"{query} ferry", SCOPE, 1500, NOW)
    assert found.passages


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    query=st.lists(
        st.sampled_from(["?", "...", "!", "the", "and", "what", "about", "it", "hmm", "ok", "so"]),
        min_size=1,
        max_size=6,
    ).map(" ".join)
)
async def test_stopwords_and_punctuation_never_return_passages(store, query):
    if not (await store.scope_turns(SCOPE)):
        await _remember(store)
    result = await _pipeline(store).recall(query, SCOPE, 1500, NOW)
    assert result.passages == []


async def test_what_we_decided_last_week_ranks_the_turn_from_last_week_first(store):
    await _remember(store)
    result = await _pipeline(store).recall("Last week, what did we decide?", SCOPE, 1500, NOW)
    first = result.passages[0].candidate.passage.turn
    assert first.session_id == "s3"  # 25 November; the older "we decided" turns come after
    assert "moved the March trip to Piran" in first.text
    assert not any("falls in" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("question", "session", "answer"),
    [
        ("What did we decide in October?", "s1", "decided on Ljubljana"),  # 26 October
        ("What did we decide 3 weeks ago?", "s2", "budget"),  # 10 November
        ("Last week, what did we decide?", "s3", "moved the March trip"),  # 25 November
    ],
)
async def test_every_turn_inside_the_range_outranks_every_turn_outside(
    store, question, session, answer
):
    await _remember(store)
    result = await _pipeline(store).recall(question, SCOPE, 1500, NOW)
    sessions = [s.candidate.passage.turn.session_id for s in result.passages]
    inside = [i for i, name in enumerate(sessions) if name == session]
    assert inside and inside == list(range(len(inside)))  # all inside first, then the rest
    assert answer in result.passages[0].candidate.passage.text
    assert not any("falls in" in w for w in result.warnings)


async def test_a_month_without_a_year_is_the_coming_one_when_the_last_holds_nothing(store):
    await _remember(store)  # asked on 30 November: last March holds nothing
    result = await _pipeline(store).recall("Where does the trip go in March?", SCOPE, 1500, NOW)
    assert not any("falls in" in w for w in result.warnings)
    texts = [s.candidate.passage.text for s in result.passages]
    assert "a trip in March" in texts[0]  # the plan for the coming March, inside
    assert len(texts) > 1  # the others from any time follow


async def test_a_month_without_a_year_still_warns_when_neither_occurrence_holds_anything(store):
    await _remember(store)
    result = await _pipeline(store).recall("What did we decide in July?", SCOPE, 1500, NOW)
    assert result.passages
    assert any("nothing recalled falls in 'July'" in w for w in result.warnings)


async def test_yesterday_means_the_day_before_now_not_the_latest_turn(store):
    await _remember(store)
    await store.remember(
        "ns",
        "s4",
        [
            TurnInput(
                "The plumber fixed the leak under the sink.",
                "Wren",
                timestamp="2026-11-29T10:00:00",
            )
        ],
    )
    await store.remember(
        "ns",
        "s5",
        [
            TurnInput(
                "The plumber sent the invoice for the sink.",
                "Wren",
                timestamp="2026-11-30T09:00:00",
            )
        ],
    )
    result = await _pipeline(store).recall("What did the plumber do yesterday?", SCOPE, 1500, NOW)
    assert result.passages[0].candidate.passage.turn.session_id == "s4"


async def test_a_turn_that_mentions_a_date_in_the_range_counts_as_inside(store):
    await store.remember(
        "ns",
        "plans",
        [
            TurnInput(
                "The dentist appointment is on December 3rd.",
                "Wren",
                timestamp="2026-11-02T09:00:00",
            ),
            TurnInput(
                "What happened at the dentist? The dentist said my teeth look fine.",
                "Wren",
                timestamp="2026-11-20T09:00:00",
            ),
        ],
    )
    reference = datetime(2026, 12, 10, 12, 0)
    result = await _pipeline(store).recall(
        "what happened at the dentist on 3 Dec 2026?", SCOPE, 1500, reference
    )
    assert "December 3rd" in result.passages[0].candidate.passage.text


async def test_a_range_with_nothing_inside_warns_and_falls_back(store):
    await _remember(store)
    result = await _pipeline(store).recall("What did we decide in April?", SCOPE, 1500, NOW)
    assert result.passages  # the best matches from any time
    assert any("nothing recalled falls in" in w for w in result.warnings)


async def test_a_spanish_question_is_flagged(store):
    await _remember(store)
    result = await _pipeline(store).recall("¿Dónde nos alojamos en marzo?", SCOPE, 1500, NOW)
    assert any("does not look English" in w for w in result.warnings)


@pytest.mark.parametrize(
    "query",
    [
        "Where do we sleep in March?",
        "What did Wren say about Pilchard's scratching post?",
        "wher do we slep in mrach",
        "why does get_user_by_id return None in prod",
    ],
)
async def test_english_questions_with_names_typos_and_code_are_not_flagged(store, query):
    await _remember(store)
    result = await _pipeline(store).recall(query, SCOPE, 1500, NOW)
    assert not any("does not look English" in w for w in result.warnings)


async def test_the_structured_output_says_why_recall_stopped(store):
    await _remember(store)
    result = await _pipeline(store, alpha=0.5).recall("Pilchard tooth vet", SCOPE, 1500, NOW)
    output = recall_output(result)
    assert output.stop_reason in ("threshold", "exhausted", "budget", "top_k")
    assert len(output.passages) == len(result.passages)
    assert all(0.0 <= p.confidence <= 1.0 for p in output.passages)
    text = format_recall("Pilchard tooth vet", result)
    assert text.splitlines()[0].endswith(").")


async def test_the_threshold_stops_early_at_the_default_budget_but_not_above_it(store):
    turns = [TurnInput("The Piran flat by Tartini Square is booked for March.", "Wren")]
    turns += [TurnInput(f"Piran note {i}: the weather was grey.", "Wren") for i in range(30)]
    await store.remember("ns", "s", turns)
    pipeline = _pipeline(store, alpha=0.5, max_tokens=1500)
    ranking = await pipeline.rank("flat by Tartini Square in Piran", SCOPE, NOW)
    default = pipeline.truncate(ranking, 1500)
    larger = pipeline.truncate(ranking, 3000)
    assert default.stop_reason == "threshold"
    assert len(default.passages) < len(larger.passages)
    assert larger.stop_reason == "exhausted"
    filled = pipeline.truncate(ranking, 1500, alpha=0.0)  # what benchmarks compare against
    assert filled.stop_reason == "exhausted" and len(filled.passages) == len(larger.passages)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_OK)
@given(query=st.text(alphabet=" \t\n?!.,;:…-—'\"()[]*#@&%~^_+=<>/|\\😀👍🙏✨", max_size=12))
async def test_punctuation_symbols_and_emoji_alone_never_return_passages(store, query):
    if not (await store.scope_turns(SCOPE)):
        await _remember(store)
    result = await _pipeline(store).recall(query, SCOPE, 1500, NOW)
    assert result.passages == []
    assert result.warnings


WORDS = ["trip", "Piran", "Ljubljana", "vet", "tooth", "Pilchard", "budget", "flat", "March"]


@settings(max_examples=25, deadline=None, suppress_health_check=FIXTURE_OK)
@given(
    texts=st.lists(
        st.lists(st.sampled_from([*WORDS, "the", "we", "booked", "moved", "said"]), max_size=12),
        min_size=1,
        max_size=20,
    ),
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    budget=st.integers(min_value=100, max_value=1500),
)
async def test_the_same_question_over_the_same_memory_always_gets_the_same_answer(
    tmp_path_factory, texts, query, budget
):
    path = tmp_path_factory.mktemp("det") / "m.db"
    store = await SQLiteStore.open(path)
    try:
        turns = [
            TurnInput(" ".join(words) or "ok", f"P{i % 3}", timestamp=f"2026-11-{1 + i:02d}")
            for i, words in enumerate(texts)
        ]
        await store.remember("ns", "s", turns)

        def answer(result: Any) -> list[tuple[Any, ...]]:
            return [
                (s.candidate.passage.key, s.score, c)
                for s, c in zip(result.passages, result.confidence, strict=True)
            ] + [(result.stop_reason, result.tokens_used, result.score_at_cut)]

        warm = _pipeline(store)
        first = answer(await warm.recall(query, SCOPE, budget, NOW))
        again = answer(await warm.recall(query, SCOPE, budget, NOW))  # caches filled
        fresh = answer(await _pipeline(store).recall(query, SCOPE, budget, NOW))
        assert first == again == fresh
    finally:
        await store.close()
