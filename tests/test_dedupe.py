"""remember keeps memory verbatim: a repeated utterance is stored, a re-sent call is not
(smartsearch_mcp/store/dedupe.py and SQLiteStore.remember)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.store.dedupe import match_resent
from smartsearch_mcp.types import InputError, TurnInput

pytestmark = pytest.mark.anyio

LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)
ANN = [
    {"text": "Do you like hiking?", "speaker": "Bo"},
    {"text": "yes", "speaker": "Ann"},
    {"text": "And would you come with us on Sunday?", "speaker": "Bo"},
    {"text": "yes", "speaker": "Ann"},
]


@pytest.mark.parametrize(
    ("stored", "call", "expected"),
    [
        ("", "QyPy", [None] * 4),  # nothing stored: every turn is new, the second y too
        ("QyPy", "QyPy", [0, 1, 2, 3]),  # the same call again
        ("QyPy", "QyPyRy", [0, 1, 2, 3, None, None]),  # a transcript re-sent, longer
        ("Qy", "Py", [None, None]),  # Ann's second yes, sent in a later call
        ("Qy", "y", [1]),  # the last call again (a retry)
        ("QyP", "y", [None]),  # a yes to the new question P
        ("ABCDEF", "CD", [2, 3]),  # an earlier call again (two turns or more)
        ("ABCDEF", "C", [None]),  # one turn alone is a retry only of the latest call
        ("ABCDEF", "AB", [0, 1]),  # the first call again
        ("ABC", "AXABC", [0, None, None, None, None]),  # only a run the call starts with
        ("ABCD", "CDEABF", [2, 3, None, None, None, None]),  # the latest turns, then new ones
        ("AyB", "y", [None]),  # a lone repeated utterance inside the session
        ("yAB", "yAyAB", [0, 1, None, None, None]),
        ("AA", "AAAA", [0, 1, None, None]),  # each stored turn stands for one turn at most
    ],
)
def test_match_resent_finds_re_sends_and_keeps_repeated_utterances(stored, call, expected):
    assert match_resent(list(stored), list(call)) == expected


@given(st.text("ABy", max_size=12), st.text("ABy", max_size=12))
def test_match_resent_maps_each_turn_to_an_equal_stored_turn_at_most_once(stored, call):
    matched = match_resent(list(stored), list(call))
    assert len(matched) == len(call)
    taken = [m for m in matched if m is not None]
    assert len(taken) == len(set(taken))
    assert all(stored[m] == call[i] for i, m in enumerate(matched) if m is not None)


@given(st.text("ABy", max_size=12), st.text("ABy", max_size=12))
def test_a_session_sent_again_with_turns_appended_matches_what_was_stored(stored, extra):
    """An import run again, or a transcript re-sent with its new turns at the end."""
    matched = match_resent(list(stored), list(stored + extra))
    assert matched[: len(stored)] == list(range(len(stored)))


@pytest.fixture
async def store(tmp_path: Path):
    store = await SQLiteStore.open(tmp_path / "m.db")
    yield store
    await store.close()


async def test_a_second_yes_in_one_call_is_stored_and_the_call_sent_again_stores_nothing(
    tmp_path: Path,
):
    server = create_server(LEXICAL, tmp_path / "m.db")
    with anyio.fail_after(30):
        async with Client(server) as client:
            first = await client.call_tool("remember", {"turns": ANN, "session_id": "walk"})
            again = await client.call_tool("remember", {"turns": ANN, "session_id": "walk"})
            longer = [*ANN, {"text": "Great!", "speaker": "Bo"}, {"text": "yes", "speaker": "Ann"}]
            extended = await client.call_tool("remember", {"turns": longer, "session_id": "walk"})
            transcript = await client.read_resource("memory://sessions/walk")
    ids = first.structured_content["ids"]
    assert len(set(ids)) == 4 and first.structured_content["stored"] == 4
    assert again.structured_content["ids"] == ids
    assert again.structured_content["stored"] == 0
    assert again.structured_content["duplicates_skipped"] == 4
    assert extended.structured_content["ids"][:4] == ids
    assert extended.structured_content["stored"] == 2
    assert transcript.contents[0].text.count('"text": "yes"') == 3


async def test_ann_answering_yes_in_a_later_call_is_stored(store):
    await store.remember("ns", "walk", [TurnInput(**t) for t in ANN[:2]])
    later = await store.remember("ns", "walk", [TurnInput(**t) for t in ANN[2:]])
    assert later.stored == 2
    retry = await store.remember("ns", "walk", [TurnInput(**t) for t in ANN[2:]])
    assert retry.ids == later.ids and retry.stored == 0
    assert [t.text for t in await store.session_turns("ns", "walk")] == [t["text"] for t in ANN]


async def test_a_note_without_session_id_sent_twice_is_stored_once(tmp_path: Path):
    server = create_server(LEXICAL, tmp_path / "m.db")
    with anyio.fail_after(30):
        async with Client(server) as client:
            first = await client.call_tool("remember", {"text": "buy oat milk"})
            retry = await client.call_tool("remember", {"text": "buy oat milk"})
            stats = await client.read_resource("memory://stats")
    assert retry.structured_content["ids"] == first.structured_content["ids"]
    assert retry.structured_content["session_id"] == first.structured_content["session_id"]
    assert retry.structured_content["stored"] == 0
    assert '"turns": 1' in stats.contents[0].text


async def test_the_same_note_a_day_later_is_a_new_turn(store):
    now = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    store.clock = lambda: now
    first = await store.remember("ns", None, [TurnInput("stand-up at 10")])
    store.clock = lambda: now + timedelta(hours=23)
    retry = await store.remember("ns", None, [TurnInput("stand-up at 10")])
    store.clock = lambda: now + timedelta(hours=23 + 25)  # a day after the retry
    next_day = await store.remember("ns", None, [TurnInput("stand-up at 10")])
    assert retry.ids == first.ids and retry.session_id == first.session_id
    assert next_day.stored == 1 and next_day.session_id != first.session_id
    assert (await store.stats()).turns == 2


async def test_a_note_retried_after_its_session_grew_still_gets_its_first_id(store):
    note = await store.remember("ns", None, [TurnInput("call the vet")])
    await store.remember("ns", note.session_id, [TurnInput("and the plumber")])
    retry = await store.remember("ns", None, [TurnInput("call the vet")])
    assert retry.ids == note.ids and retry.stored == 0


async def test_a_note_retried_after_it_was_forgotten_is_stored_again(store):
    note = await store.remember("ns", None, [TurnInput("secret plan")])
    await store.forget("ns", ids=note.ids)
    again = await store.remember("ns", None, [TurnInput("secret plan")])
    assert again.stored == 1 and (await store.stats()).turns == 1


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=st.lists(st.lists(st.sampled_from(["yes", "no", "ok", "hi"]), min_size=1,
                                max_size=5), min_size=1, max_size=4))  # fmt: skip
async def test_any_call_sent_twice_in_a_row_stores_nothing_the_second_time(tmp_path_factory, calls):
    store = await SQLiteStore.open(tmp_path_factory.mktemp("d") / "m.db")
    try:
        for texts in calls:
            turns = [TurnInput(t, "Ann") for t in texts]
            first = await store.remember("ns", "s", turns)
            again = await store.remember("ns", "s", turns)
            assert first.stored + first.duplicates_skipped == len(texts)
            assert again.ids == first.ids and again.stored == 0
        assert await store.integrity_check() == []
    finally:
        await store.close()


async def test_a_database_from_before_migration_4_keeps_repeated_utterances(tmp_path: Path):
    import sqlite3

    from smartsearch_mcp.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for number, statements in enumerate(MIGRATIONS[:3], start=1):
        for statement in statements:
            db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?, '2026-01-01T00:00:00Z')", (number,))
    db.commit()
    db.close()
    store = await SQLiteStore.open(path)
    try:
        result = await store.remember("ns", "walk", [TurnInput(**t) for t in ANN])
        assert result.stored == 4 and len(set(result.ids)) == 4
    finally:
        await store.close()


async def test_one_call_holding_more_characters_than_the_cap_is_refused_naming_it(tmp_path):
    store = await SQLiteStore.open(tmp_path / "m.db", max_call_chars=1000)
    try:
        with pytest.raises(InputError, match=r"store\.max_call_chars"):
            await store.remember("ns", "s", [TurnInput("x" * 600), TurnInput("y" * 600)])
        assert (await store.stats()).turns == 0
        ok = await store.remember("ns", "s", [TurnInput("x" * 500), TurnInput("y" * 500)])
        assert ok.stored == 2
    finally:
        await store.close()
