"""The SQLite store on real files: verbatim turns, dedupe, sessions, forget, FTS in step."""

from __future__ import annotations

import itertools
import os
import sqlite3
import stat
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.store.queries import fts_any, fts_quote, scope_filter
from smartsearch_mcp.store.schema import MIGRATIONS
from smartsearch_mcp.types import InputError, NotFoundError, Scope, TurnInput

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path):
    s = await SQLiteStore.open(tmp_path / "memory.db")
    yield s
    await s.close()


async def test_remember_returns_ids_in_input_order_and_stores_text_verbatim(store):
    texts = ["  leading space", "emoji 🎉 and RTL שלום", "tabs\tand\nnewlines", "NUL\x00byte"]
    result = await store.remember("ns", "s1", [TurnInput(t, speaker="Ann") for t in texts])
    turns = await store.get_turns(result.ids)
    assert [t.text for t in turns] == texts
    assert [t.position for t in turns] == [0, 1, 2, 3]
    assert result.ids == sorted(result.ids)
    assert result.stored == 4 and result.duplicates_skipped == 0


async def test_turns_read_together_share_their_repeated_values_and_no_metadata(store):
    inputs = [TurnInput(f"turn {i}", speaker="Ann", timestamp="2024-05-01") for i in range(3)]
    inputs.append(TurnInput("tagged", speaker="Bob", metadata={"tag": "x"}))
    await store.remember("ns", "s1", inputs)

    turns = await store.scope_turns(Scope(namespaces=("ns",)))

    first, second = turns[0], turns[1]
    assert first.session_id is second.session_id and first.speaker is second.speaker
    assert first.timestamp is second.timestamp and first.created_at is second.created_at
    assert first.metadata == {} and first.metadata is second.metadata
    with pytest.raises(TypeError, match="read-only"):
        first.metadata["key"] = "value"  # shared: a change would reach every turn
    assert second.metadata == {} and turns[3].metadata == {"tag": "x"}


async def test_duplicate_turns_are_skipped_counted_and_mapped_to_the_stored_id(store):
    first = await store.remember("ns", "s1", [TurnInput("hi", "A", timestamp="2024-01-01")])
    again = await store.remember(
        "ns", "s1", [TurnInput("hi", "A", timestamp="2024-01-01"), TurnInput("new", "A")]
    )
    assert again.duplicates_skipped == 1 and again.stored == 1
    assert again.ids[0] == first.ids[0]
    # Same text in another session, or by another speaker, is not a duplicate.
    other = await store.remember("ns", "s2", [TurnInput("hi", "A", timestamp="2024-01-01")])
    assert other.stored == 1


async def test_a_turn_resent_later_without_a_timestamp_is_a_duplicate(store, monkeypatch):
    from smartsearch_mcp.store import turns as module

    first = await store.remember("ns", "s1", [TurnInput("retry me", "A")])
    monkeypatch.setattr(module, "now", lambda: "2031-01-01T00:00:00Z")  # a later call
    again = await store.remember("ns", "s1", [TurnInput("retry me", "A")])
    assert again.ids == first.ids and again.duplicates_skipped == 1
    assert (await store.stats()).turns == 1


async def test_timestamps_are_normalized_and_the_original_kept(store):
    result = await store.remember(
        "ns",
        "s1",
        [
            TurnInput("a", timestamp="1:56 pm on 8 May, 2023"),
            TurnInput("b", timestamp="2023/05/20 (Sat) 02:21"),
            TurnInput("c", timestamp="2024-03-15T10:00:00+02:00"),
            TurnInput("d", timestamp=1700000000),
        ],
    )
    turns = await store.get_turns(result.ids)
    # One form, UTC with "Z": a time given without an offset is taken as UTC.
    assert [t.timestamp for t in turns] == [
        "2023-05-08T13:56:00Z",
        "2023-05-20T02:21:00Z",
        "2024-03-15T08:00:00Z",
        "2023-11-14T22:13:20Z",
    ]
    assert turns[0].timestamp_raw == "1:56 pm on 8 May, 2023"


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (TurnInput(""), "non-empty"),
        (TurnInput("x", role="robot"), "role"),
        (TurnInput("x", timestamp="not a date"), "timestamp"),
        (TurnInput("x", timestamp="99999-01-01"), "timestamp"),
        (TurnInput("bad \ud800 surrogate"), "surrogate"),
        (TurnInput("x", metadata=["not", "an", "object"]), "metadata"),  # type: ignore[arg-type]
    ],
)
async def test_bad_turns_raise_a_clear_error_and_store_nothing(store, turn, message):
    with pytest.raises(InputError, match=message):
        await store.remember("ns", "s1", [TurnInput("good one"), turn])
    assert (await store.stats()).turns == 0


async def test_more_turns_than_the_limit_is_an_error_naming_the_limit(tmp_path):
    store = await SQLiteStore.open(tmp_path / "m.db", max_turns_per_call=3)
    try:
        with pytest.raises(InputError, match="limit is 3"):
            await store.remember("ns", None, [TurnInput(f"t{i}") for i in range(4)])
    finally:
        await store.close()


async def test_ten_thousand_turns_are_stored_in_one_call(store):
    result = await store.remember("ns", None, [TurnInput(f"turn {i}") for i in range(10_000)])
    assert result.stored == 10_000 and len(set(result.ids)) == 10_000
    sessions = await store.list_sessions("ns")
    assert sessions[0].turn_count == 10_000


async def test_sessions_track_first_and_last_timestamp_and_count(store):
    await store.remember(
        "ns", "s1", [TurnInput("a", timestamp="2023-05-08"), TurnInput("b", timestamp="2023-05-01")]
    )
    (info,) = await store.list_sessions("ns")
    assert (info.first_timestamp, info.last_timestamp, info.turn_count) == (
        "2023-05-01T00:00:00Z",
        "2023-05-08T00:00:00Z",
        2,
    )


async def test_naive_timestamps_of_an_older_database_read_as_utc_and_still_match(tmp_path):
    path = tmp_path / "old.db"
    store = await SQLiteStore.open(path)
    given = TurnInput("met Ann", timestamp="2023-05-08 13:56")
    first = await store.remember("ns", "s1", [given])
    await store.close()
    with sqlite3.connect(path) as db:  # as databases written before stored times had the Z
        db.execute("UPDATE turns SET timestamp = rtrim(timestamp, 'Z')")
    store = await SQLiteStore.open(path)
    try:
        [turn] = await store.get_turns(first.ids)
        assert turn.timestamp == "2023-05-08T13:56:00Z"
        again = await store.remember("ns", "s1", [given])
        assert again.stored == 0 and again.ids == first.ids
        since = datetime(2023, 5, 8, 13, 0, tzinfo=UTC)
        window = Scope(namespaces=("ns",), since=since, until=since + timedelta(hours=1))
        assert [t.id for t in await store.timeline_turns(window, 10)] == first.ids
    finally:
        await store.close()


async def test_forget_by_ids_session_and_namespace(store):
    a = await store.remember("ns", "s1", [TurnInput("one"), TurnInput("two")])
    await store.remember("ns", "s2", [TurnInput("three")])
    await store.remember("other", "s1", [TurnInput("kept")])
    gone = await store.forget("ns", ids=[a.ids[0]])
    assert gone.deleted_turn_ids == [a.ids[0]]
    gone = await store.forget("ns", session_id="s1")
    assert gone.deleted_turn_ids == [a.ids[1]] and gone.deleted_sessions == ["s1"]
    await store.forget("ns", whole_namespace=True)
    stats = await store.stats()
    assert stats.namespaces == {"other": 1}
    assert await store.search_fts(fts_any(["one", "two", "three"]), Scope(("ns",)), 10) == []


async def test_forget_unknown_ids_deletes_nothing(store):
    a = await store.remember("ns", "s1", [TurnInput("one")])
    with pytest.raises(NotFoundError, match="999"):
        await store.forget("ns", ids=[a.ids[0], 999])
    assert (await store.stats()).turns == 1


@pytest.mark.parametrize("bad", [0, -1, 2**63, True, "1"])
async def test_ids_outside_sqlites_integers_are_a_clear_error(store, bad):
    a = await store.remember("ns", "s1", [TurnInput("one")])
    with pytest.raises(InputError, match="turn ids are integers from 1 to"):
        await store.forget("ns", ids=[a.ids[0], bad])
    with pytest.raises(InputError, match="turn ids are integers from 1 to"):
        await store.get_turns([bad])
    assert (await store.stats()).turns == 1
    assert await store.get_turns([2**63 - 1]) == []


async def test_fts_index_stays_in_step_with_turns(store):
    await store.remember("ns", "s1", [TurnInput("Caroline went hiking"), TurnInput("Mel paints")])
    hits = await store.search_fts(fts_any(["hiking"]), Scope(("ns",)), 10)
    assert len(hits) == 1
    assert await store.integrity_check() == []


async def test_the_fts_index_is_kept_in_step_as_the_store_module_says(tmp_path):
    """remember indexes its turns itself (no insert trigger since migration 3); triggers
    take a deleted turn out of the index and re-index a turn whose text is updated."""
    import sqlite3

    store = await SQLiteStore.open(tmp_path / "m.db")
    try:
        a = await store.remember("ns", "s1", [TurnInput("went hiking"), TurnInput("paints")])
        with sqlite3.connect(tmp_path / "m.db") as db:
            triggers = {
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
            }
            assert triggers == {"turns_fts_delete", "turns_fts_update"}
            db.execute("UPDATE turns SET text = 'went sailing' WHERE id = ?", (a.ids[0],))
            db.execute("DELETE FROM turns WHERE id = ?", (a.ids[1],))

        async def found(word: str) -> list[int]:
            return [i for i, _ in await store.search_fts(fts_any([word]), Scope(("ns",)), 10)]

        assert (await found("hiking"), await found("sailing"), await found("paints")) == (
            [],
            [a.ids[0]],
            [],
        )
        b = await store.remember("ns", "s1", [TurnInput("went climbing")])
        assert await found("climbing") == b.ids
        assert await store.integrity_check() == []
    finally:
        await store.close()


async def test_fts_search_is_exact_for_a_small_scope_inside_a_large_memory(store):
    # The index's best rows all belong to another namespace: the scoped search must still
    # return the scope's own best matches, best first.
    await store.remember("big", "s", [TurnInput(f"apple {i}") for i in range(40)])
    small = await store.remember(
        "small",
        "s",
        [
            TurnInput("an apple " + "filler " * 5),
            TurnInput("apple apple " + "filler " * 40),
            TurnInput("an apple " + "filler " * 80),
        ],
    )
    hits = await store.search_fts(fts_any(["apple"]), Scope(("small",)), 2)
    assert [turn_id for turn_id, _ in hits] == small.ids[:2]
    assert hits[0][1] >= hits[1][1]
    everything = await store.search_fts(fts_any(["apple"]), Scope(("big", "small")), 100)
    assert len(everything) == 43


async def test_fts_doc_counts_and_turn_count_estimate(store):
    assert await store.turn_count_estimate() == 0
    await store.remember("a", "s", [TurnInput("red fox"), TurnInput("red hen")])
    await store.remember("b", "s", [TurnInput("blue fox")])
    counts = await store.fts_doc_counts(['"red"', '"fox"', '"owl"'])
    assert counts == {'"red"': 2, '"fox"': 2, '"owl"': 0}
    assert await store.turn_count_estimate() >= 3


async def test_scope_filters_by_session_and_dates(store):
    await store.remember("ns", "s1", [TurnInput("old", timestamp="2020-01-01")])
    await store.remember("ns", "s2", [TurnInput("new", timestamp="2024-01-01")])
    from datetime import datetime

    recent = await store.scope_turns(Scope(("ns",), since=datetime(2023, 1, 1)))
    assert [t.text for t in recent] == ["new"]
    only_s1 = await store.scope_turns(Scope(("ns",), session_id="s1"))
    assert [t.text for t in only_s1] == ["old"]


async def test_database_file_is_private_and_uses_wal(tmp_path):
    path = tmp_path / "private.db"
    store = await SQLiteStore.open(path)
    await store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_concurrent_writes_in_one_process_commit_each_their_own_turns(store):
    # Tasks of one process (e.g. several HTTP sessions) share the writer connection: each
    # transaction must run alone, and a failing one must not roll back another's turns.
    acknowledged: dict[str, int] = {}
    failures: list[str] = []

    async def writer(n: int) -> None:
        for batch in range(3):
            texts = [f"task {n} batch {batch} turn {i}" for i in range(10)]
            result = await store.remember("ns", f"s{n}", [TurnInput(t) for t in texts])
            acknowledged.update(zip(texts, result.ids, strict=True))
            try:
                await store.forget("ns", ids=[10**9 + n])
            except NotFoundError as exc:
                failures.append(str(exc))

    async with anyio.create_task_group() as group:
        for n in range(12):
            group.start_soon(writer, n)
    assert len(failures) == 36
    stored = {t.text: t.id async for t in store.iter_turns()}
    assert stored == acknowledged and len(stored) == 360
    assert await store.integrity_check() == []


async def test_reopening_keeps_turns_and_schema_version(tmp_path):
    path = tmp_path / "m.db"
    store = await SQLiteStore.open(path)
    await store.remember("ns", "s1", [TurnInput("persisted")])
    version = await store.schema_version()
    await store.close()
    store = await SQLiteStore.open(path)
    try:
        assert await store.schema_version() == version
        assert (await store.stats()).turns == 1
    finally:
        await store.close()


async def test_a_server_left_running_while_a_newer_release_migrates_writes_nothing(tmp_path):
    path = tmp_path / "m.db"
    store = await SQLiteStore.open(path)
    try:
        await store.remember("ns", "s1", [TurnInput("before the upgrade")])
        newer = await store.schema_version() + 1
        with sqlite3.connect(path) as db:  # what a newer release's migration leaves behind
            db.execute("INSERT INTO schema_version VALUES (?, '2027-01-01T00:00:00Z')", (newer,))

        with pytest.raises(InputError, match="restart the server"):
            await store.remember("ns", "s1", [TurnInput("after the upgrade")])
        with pytest.raises(InputError, match=f"schema version {newer}"):
            await store.forget("ns", session_id="s1")
        assert [t.text async for t in store.iter_turns()] == ["before the upgrade"]
    finally:
        await store.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    stamps=st.lists(st.sampled_from([None, "2024-01-01", "2024-01-02", "2023-12-31"]), max_size=12),
    batch=st.integers(1, 4),
)
async def test_a_scan_pages_through_every_turn_most_recent_first(tmp_path, stamps, batch):
    store = await SQLiteStore.open(tmp_path / f"scan-{uuid.uuid4().hex}.db")
    try:
        for i, stamp in enumerate(stamps):  # one session each: equal turns are not duplicates
            await store.remember("ns", f"s{i}", [TurnInput(f"turn {i}", timestamp=stamp)])
        await store.remember("other", "s", [TurnInput("out of scope")])

        scanned = [t async for t in store.iter_scope_turns(Scope(("ns",)), batch=batch)]

        everything = [t async for t in store.iter_turns() if t.namespace == "ns"]
        expected = sorted(everything, key=lambda t: (t.timestamp or "", t.id), reverse=True)
        assert [t.id for t in scanned] == [t.id for t in expected]
    finally:
        await store.close()


async def test_in_memory_database_works():
    store = await SQLiteStore.open(":memory:")
    try:
        r = await store.remember("ns", None, [TurnInput("hello")])
        assert (await store.get_turns(r.ids))[0].text == "hello"
    finally:
        await store.close()


async def test_embeddings_are_cached_and_dropped_with_their_turn(store):
    r = await store.remember("ns", "s1", [TurnInput("a"), TurnInput("b")])
    await store.put_embeddings("m", [(r.ids[0], 0, b"\x01\x02"), (999, 0, b"x")])
    assert await store.get_embeddings("m", [(r.ids[0], 0), (r.ids[1], 0)]) == {
        (r.ids[0], 0): b"\x01\x02"
    }
    assert [t.id for t in await store.turns_without_embeddings("m", 10)] == [r.ids[1]]
    await store.forget("ns", ids=[r.ids[0]])
    assert await store.get_embeddings("m", [(r.ids[0], 0)]) == {}


def test_scope_filter_builds_the_expected_sql():
    from datetime import datetime

    where, params = scope_filter(
        Scope(("a", "b"), session_id="s", since=datetime(2023, 1, 1), until=datetime(2024, 1, 1)),
        alias="t",
    )
    assert where == (
        "t.namespace IN (?, ?) AND t.session_id = ? AND substr(t.timestamp, 1, 19) >= ? "
        "AND substr(t.timestamp, 1, 19) < ?"
    )
    assert params == ["a", "b", "s", "2023-01-01T00:00:00", "2024-01-01T00:00:00"]


def test_fts_quote_neutralizes_query_syntax():
    assert fts_quote('NEAR("a" * b) AND -c:d') == '"NEAR a b AND c d"'
    assert fts_quote("*()") is None
    assert fts_any(["x y", "x y", "z"]) == '"x y" OR "z"'


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(min_size=1, max_size=200))
async def test_any_text_is_a_safe_fts_query_that_finds_the_turn_it_came_from(store, text):
    """Any user text is safe as a query (no FTS5 syntax error) and finds nothing but the
    turn that says it — that turn, when a plain (ASCII) word of it is asked for."""
    namespace = f"fts-{next(_EXAMPLES)}"  # a namespace of its own per example
    ids = (await store.remember(namespace, None, [TurnInput(text)])).ids if text.strip() else []
    match = fts_any(text.split() or [text])
    found = [turn_id for turn_id, _ in await store.search_fts(match, Scope((namespace,)), 5)]
    assert set(found) <= set(ids)
    if any(word.isascii() and word.isalnum() for word in text.split()):
        assert found == ids


_EXAMPLES = itertools.count()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    texts=st.lists(
        st.text(st.characters(blacklist_categories=["Cs"]), min_size=1).filter(str.strip),
        min_size=1,
        max_size=5,
    ),
    speaker=st.none() | st.text(st.characters(blacklist_categories=["Cs", "Cc"]), max_size=20),
)
async def test_whatever_is_remembered_reads_back_verbatim(store, texts, speaker):
    result = await store.remember("prop", None, [TurnInput(t, speaker=speaker) for t in texts])
    turns = await store.get_turns(result.ids)
    stored_texts = {t.id: t.text for t in turns}
    assert [stored_texts[i] for i in result.ids] == texts


async def test_previous_turns_are_the_ones_said_just_before_in_the_same_session(store):
    a = await store.remember("ns", "s1", [TurnInput("q1"), TurnInput("a1"), TurnInput("q2")])
    b = await store.remember("ns", "s2", [TurnInput("other")])
    previous = await store.previous_turns([*a.ids, *b.ids])
    assert {k: v.text for k, v in previous.items()} == {a.ids[1]: "q1", a.ids[2]: "a1"}


async def test_forgetting_a_turn_drops_the_context_vector_of_the_turn_after_it(store):
    r = await store.remember("ns", "s1", [TurnInput("secret"), TurnInput("reply")])
    await store.put_embeddings("m#context", [(r.ids[1], 0, b"ctx")])
    await store.put_embeddings("m", [(r.ids[1], 0, b"own")])
    await store.forget("ns", ids=[r.ids[0]])
    assert await store.get_embeddings("m#context", [(r.ids[1], 0)]) == {}
    assert await store.get_embeddings("m", [(r.ids[1], 0)]) == {(r.ids[1], 0): b"own"}


def _old_database(path: Path, version: int) -> None:
    """A database as an earlier release left it: migrations 1..`version` only."""
    from smartsearch_mcp.store.schema import MIGRATIONS

    db = sqlite3.connect(path)
    for number, statements in enumerate(MIGRATIONS[:version], start=1):
        for statement in statements:
            db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?, '2026-01-01T00:00:00Z')", (number,))
    db.execute("INSERT INTO sessions VALUES ('ns', 's1', NULL, NULL, 1, '2026-01-01')")
    db.execute(  # indexed by the old per-row trigger
        "INSERT INTO turns (namespace, session_id, position, role, text, created_at, "
        "content_hash) VALUES ('ns', 's1', 0, 'user', 'an old turn about gardening', "
        "'2026-01-01', 'h0')"
    )
    db.commit()
    db.close()


async def test_an_old_database_is_migrated_and_new_turns_are_indexed_by_remember(tmp_path):
    path = tmp_path / "old.db"
    _old_database(path, 2)
    store = await SQLiteStore.open(path)
    try:
        assert await store.schema_version() == len(MIGRATIONS)
        result = await store.remember(
            "ns",
            "s1",
            [TurnInput("gardening with Ann", "Bo"), TurnInput("an old turn about gardening")],
        )
        assert result.stored == 2  # no speaker, no timestamp: not the old turn's identity
        await store.remember("ns", "s2", [TurnInput(f"kitchen note {i}") for i in range(50)])
        await store.forget("ns", ids=[result.ids[0]])
        hits = await store.search_fts(fts_any(["gardening"]), Scope(("ns",)), 10)
        assert len(hits) == 2  # the old turn and the new copy; the forgotten one is gone
        assert len(await store.search_fts(fts_any(["kitchen"]), Scope(("ns",)), 100)) == 50
        assert len(await store.search_fts(fts_any(["ann"]), Scope(("ns",)), 10)) == 0
        assert await store.integrity_check() == []
    finally:
        await store.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    batches=st.lists(
        st.lists(st.sampled_from(["alpha", "beta gamma", "delta", "alpha beta"]), max_size=6),
        min_size=1,
        max_size=5,
    )
)
async def test_the_full_text_index_matches_the_turns_after_any_remember_sequence(
    tmp_path_factory, batches
):
    """remember indexes exactly its new turns (duplicates in a call and across calls
    skipped): FTS5's integrity check compares the index with the turns table."""
    store = await SQLiteStore.open(tmp_path_factory.mktemp("fts") / "m.db")
    try:
        for number, texts in enumerate(batches):
            if texts:
                await store.remember("ns", f"s{number % 2}", [TurnInput(t) for t in texts])
        assert await store.integrity_check() == []
        stored = (await store.stats()).turns
        hits = await store.search_fts(fts_any(["alpha", "beta", "delta"]), Scope(("ns",)), 1000)
        assert len(hits) == stored
    finally:
        await store.close()


async def test_scope_pages_read_a_scope_in_id_order_up_to_a_turn(store):
    first = await store.remember("ns", "a", [TurnInput(f"a{i}") for i in range(5)])
    await store.remember("other", "b", [TurnInput(f"b{i}") for i in range(3)])
    second = await store.remember("ns", "c", [TurnInput(f"c{i}") for i in range(4)])
    scope = Scope(("ns",))

    pages = [[t.id for t in page] async for page in store.scope_pages(scope, batch=4)]
    assert [len(p) for p in pages] == [4, 4, 1]
    assert [i for page in pages for i in page] == [t.id for t in await store.scope_turns(scope)]

    upto = [t.id async for page in store.scope_pages(scope, 4, first.ids[-1]) for t in page]
    assert upto == first.ids
    assert second.ids[0] not in upto


async def test_scope_size_counts_turns_and_characters_exactly_or_by_sampling(store, monkeypatch):
    texts = [("x" * (i % 7 + 1)) + f" {i}" for i in range(300)]
    result = await store.remember("ns", "s", [TurnInput(t) for t in texts])
    await store.remember("other", "s", [TurnInput("y" * 1000)])
    chars = sum(len(t) for t in texts)
    assert await store.scope_size(Scope(("ns",))) == (300, chars, result.ids[-1])

    import smartsearch_mcp.store.sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "SIZE_EXACT_TURNS", 10)
    turns, estimate, last = await store.scope_size(Scope(("ns",)))
    assert (turns, last) == (300, result.ids[-1])
    assert abs(estimate - chars) < 0.1 * chars  # never counting the other namespace's text
    assert await store.scope_size(Scope(("empty",))) == (0, 0, 0)


async def test_the_scope_fingerprint_changes_exactly_when_a_turn_enters_or_leaves(store):
    scope = Scope(("ns",))
    empty = await store.scope_fingerprint(scope)
    first = await store.remember("ns", "s", [TurnInput("one"), TurnInput("two")])
    after_add = await store.scope_fingerprint(scope)
    assert empty == (0, 0) and after_add == (2, first.ids[-1])

    await store.remember("other", "s", [TurnInput("three")])
    await store.put_embeddings("m:1", [(first.ids[0], 0, b"\0\0\0\0")])
    assert await store.scope_fingerprint(scope) == after_add

    await store.forget("ns", ids=[first.ids[-1]])
    replaced = await store.remember("ns", "s", [TurnInput("four")])
    # one turn left and one came: same count, but a new id is never an old one
    assert await store.scope_fingerprint(scope) == (2, replaced.ids[0])
    assert replaced.ids[0] > first.ids[-1]


async def test_forget_takes_any_number_of_ids(store):
    stored = await store.remember("ns", "s", [TurnInput(f"turn {i}") for i in range(1200)])
    with pytest.raises(NotFoundError, match=r"\(300000 in all\).*nothing was deleted"):
        await store.forget("ns", ids=list(range(10**9, 10**9 + 300_000)))
    assert (await store.stats()).turns == 1200
    done = await store.forget("ns", ids=stored.ids)
    assert len(done.deleted_turn_ids) == 1200 and (await store.stats()).turns == 0


async def test_a_full_disk_is_a_clear_error_and_nothing_is_written(store):
    from smartsearch_mcp.store.sqlite import StorageFullError

    await store.remember("ns", "s", [TurnInput("before the disk filled")])
    async with store._writer.execute("PRAGMA page_count") as cursor:
        (pages,) = await cursor.fetchone()
    await store._writer.execute(f"PRAGMA max_page_count = {pages + 2}")  # a disk about full
    with pytest.raises(StorageFullError, match=r"is full.*nothing of this call was written"):
        await store.remember("ns", "s", [TurnInput("x" * 200_000)])
    assert (await store.stats()).turns == 1
