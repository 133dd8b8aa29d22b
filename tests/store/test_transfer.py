"""`migrate`: a memory copied between SQLite and PostgreSQL as it is (ids, sessions,
embeddings, re-send records), resumable after a stop, verified by counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from smartsearch_mcp.store import DatabaseError, Store, open_store
from smartsearch_mcp.store.queries import fts_any
from smartsearch_mcp.store.transfer import copy_memory
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["sqlite-to-postgres", "postgres-to-sqlite", "sqlite-to-sqlite"])
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    source_kind, target_kind = request.param.split("-to-")

    def named(kind: str, name: str) -> str:
        if kind == "sqlite":
            return str(tmp_path / f"{name}.db")
        return str(request.getfixturevalue("postgres_url"))

    return named(source_kind, "source"), named(target_kind, "target")


async def _fill(store: Store) -> list[int]:
    ids: list[int] = []
    for n in range(7):
        turns = [
            TurnInput(f"session {n} turn {i} about the quarterly roadmap", "Ann", "user")
            for i in range(30)
        ]
        ids += (await store.remember("team", f"s{n}", turns)).ids
    await store.remember("other", None, [TurnInput("a note", metadata={"tag": "x"})])
    await store.forget("team", ids=ids[5:8])  # a gap in the ids
    await store.put_embeddings("model-a", [(i, 0, i.to_bytes(4, "little")) for i in ids[:50]])
    return ids


async def _contents(store: Store) -> tuple:
    turns = [
        (t.id, t.namespace, t.session_id, t.position, t.text, t.timestamp, t.metadata)
        async for t in store.iter_turns()
    ]
    sessions = [(s.namespace, s.id, s.turn_count) for s in await store.list_sessions()]
    vectors = await store.get_embeddings("model-a", [(t[0], 0) for t in turns])
    return turns, sorted(sessions), vectors


async def test_a_memory_moves_as_it_is_and_keeps_working_in_its_new_database(databases):
    source_db, target_db = databases
    source, target = await open_store(source_db), await open_store(target_db)
    try:
        ids = await _fill(source)
        report = await copy_memory(source, target, batch=64)
        assert report.source == report.target and report.target["turns"] == len(ids) - 3 + 1
        assert await _contents(target) == await _contents(source)

        hits = await target.search_fts(fts_any(["roadmap"]), Scope(("team",)), 500)
        assert len(hits) == len(ids) - 3  # the full-text index holds the copied turns
        again = await target.remember("team", "s0", [TurnInput("a new turn")])
        assert again.ids[0] > max(ids)  # ids continue after the copied ones
        resent = [
            TurnInput(f"session 1 turn {i} about the quarterly roadmap", "Ann", "user")
            for i in range(30)
        ]  # the call again: recognised in the new database too
        assert (await target.remember("team", "s1", resent)).stored == 0
    finally:
        await source.close()
        await target.close()


async def test_a_migration_that_stopped_resumes_and_copies_each_row_once(databases, monkeypatch):
    source_db, target_db = databases
    source, target = await open_store(source_db), await open_store(target_db)
    try:
        await _fill(source)
        real = target.put_table_rows
        calls = 0

        async def failing(table, rows):
            nonlocal calls
            calls += 1
            if table == "turns" and calls > 3:
                raise ConnectionError("the network went away")
            return await real(table, rows)

        monkeypatch.setattr(target, "put_table_rows", failing)
        with pytest.raises(ConnectionError):
            await copy_memory(source, target, batch=40)
        assert 0 < await target.table_count("turns") < await source.table_count("turns")
        monkeypatch.setattr(target, "put_table_rows", real)

        report = await copy_memory(source, target, batch=40)
        assert report.source == report.target
        assert await _contents(target) == await _contents(source)
    finally:
        await source.close()
        await target.close()


async def test_a_target_holding_another_memory_is_refused_untouched(databases):
    source_db, target_db = databases
    source, target = await open_store(source_db), await open_store(target_db)
    try:
        await _fill(source)
        await target.remember("mine", "s", [TurnInput("my own turn")])
        with pytest.raises(DatabaseError, match="already holds turns of another memory"):
            await copy_memory(source, target)
        assert [t.text async for t in target.iter_turns()] == ["my own turn"]
    finally:
        await source.close()
        await target.close()


def test_the_migrate_command_copies_and_reports_the_verified_counts(tmp_path, capsys):
    import anyio

    from smartsearch_mcp.cli import main

    source_db, target_db = str(tmp_path / "a.db"), str(tmp_path / "b.db")

    async def fill() -> None:
        store = await open_store(source_db)
        await _fill(store)
        await store.close()

    anyio.run(fill)
    assert main(["migrate", "--from", source_db, "--to", target_db]) == 0
    err = capsys.readouterr().err
    assert "verified: both hold" in err and "208 turns" in err
    assert main(["migrate", "--from", source_db, "--to", target_db]) == 0  # again: no-op
    assert "0 turns, 0 embeddings" in capsys.readouterr().err


async def test_migrating_redacts_the_copy_unless_the_config_keeps_secrets(tmp_path: Path):
    from smartsearch_mcp.config import StoreConfig
    from smartsearch_mcp.store.transfer import migrate_memory

    key = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 4
    source_db = str(tmp_path / "source.db")
    source = await open_store(source_db, redact_secrets=False)  # as an earlier release stored
    await source.remember("team", "s1", [TurnInput(f"the key is {key}"), TurnInput("plain")])
    await source.close()

    async def copied_texts(target_db: str) -> list[str]:
        target = await open_store(target_db, read_only=True)
        try:
            return [turn.text async for turn in target.iter_turns(None)]
        finally:
            await target.close()

    redacting = await migrate_memory(source_db, str(tmp_path / "a.db"), StoreConfig(), batch=1)
    assert redacting.redacted == 1 and redacting.report.copied["turns"] == 2
    assert not any(key in text for text in await copied_texts(str(tmp_path / "a.db")))

    keeping = StoreConfig(redact_secrets=False)
    verbatim = await migrate_memory(source_db, str(tmp_path / "b.db"), keeping)
    assert verbatim.redacted == 0
    assert any(key in text for text in await copied_texts(str(tmp_path / "b.db")))
