"""The SQLite store on real files: verbatim turns, dedupe, sessions, forget, FTS in step."""

from __future__ import annotations

import itertools
import os
import sqlite3
import stat
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.store.queries import fts_any, fts_quote, scope_filter
from smartsearch_mcp.store.schema import MIGRATIONS
from smartsearch_mcp.types import InputError, Scope, TurnInput

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path):
    s = await SQLiteStore.open(tmp_path / "memory.db")
    yield s
    await s.close()


async def test_more_turns_than_the_limit_is_an_error_naming_the_limit(tmp_path):
    store = await SQLiteStore.open(tmp_path / "m.db", max_turns_per_call=3)
    try:
        with pytest.raises(InputError, match="limit is 3"):
            await store.remember("ns", None, [TurnInput(f"t{i}") for i in range(4)])
    finally:
        await store.close()


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


async def test_database_file_is_private_and_uses_wal(tmp_path):
    path = tmp_path / "private.db"
    store = await SQLiteStore.open(path)
    await store.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


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


_EXAMPLES = itertools.count()


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


async def test_a_full_disk_is_a_clear_error_and_nothing_is_written(store):
    from smartsearch_mcp.store.sqlite import StorageFullError

    await store.remember("ns", "s", [TurnInput("before the disk filled")])
    async with store._writer.execute("PRAGMA page_count") as cursor:
        (pages,) = await cursor.fetchone()
    await store._writer.execute(f"PRAGMA max_page_count = {pages + 2}")  # a disk about full
    with pytest.raises(StorageFullError, match=r"is full.*nothing of this call was written"):
        await store.remember("ns", "s", [TurnInput("x" * 200_000)])
    assert (await store.stats()).turns == 1


async def test_sqlite_keeps_a_nul_character_verbatim(store):
    result = await store.remember("ns", "s1", [TurnInput("NUL\x00byte", speaker="Ann")])
    assert [t.text for t in await store.get_turns(result.ids)] == ["NUL\x00byte"]
