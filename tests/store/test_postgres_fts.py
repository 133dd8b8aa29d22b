"""PostgreSQL's full-text search ranks as SQLite's FTS5 does (store/postgres_fts.py): the same
turns in the same order with the same BM25 scores, for phrases, stems, accents and speakers,
after forgets and copies too."""

from __future__ import annotations

from pathlib import Path

import pytest

from smartsearch_mcp.store import open_store
from smartsearch_mcp.store.postgres_fts import bm25_search
from smartsearch_mcp.store.queries import fts_any
from smartsearch_mcp.store.transfer import copy_memory
from smartsearch_mcp.types import Scope, TurnInput

pytestmark = pytest.mark.anyio

CONVERSATION = [
    ("Margaret", "I went hiking up Ben Lomond on Saturday with my dog."),
    ("Tobias", "Hiking sounds lovely! I painted a sunrise over the lake."),
    ("Margaret", "The rental agency called: the rental interview is next Tuesday."),
    ("Tobias", "Good luck with the interview. Painting helps me relax after work."),
    ("Margaret", "My dog loves the lake. We hike there every Sunday, dogs allowed."),
    ("Tobias", "New York in the spring is lovely; New York pizza even more so."),
    ("Margaret", "Running a marathon in New York is on my list, running daily now."),
    ("Tobias", "I ran into an old friend: she runs a weaving class downtown."),
    ("Margaret", "Weaving! The class meets on Tuesday evenings, she says."),
    ("Tobias", "config.toml broke the deploy; v1.2 fixed it, see a@b.com."),
    ("Margaret", "Coffee at the café with Zoë, then her résumé: naïve but honest."),
]
OTHER = [
    ("Ann", "The lake froze early this winter, so no hiking for weeks."),
    ("Bob", "Interview tips: research the agency and rehearse your answers."),
    ("Ann", "new york new york, a song about the city"),
]
QUERIES = [
    ["hiking"],
    ["hike", "dog"],
    ["rental", "interview"],
    ["New York"],
    ["new york pizza", "lake"],
    ["running", "runs", "ran"],
    ["Margaret", "weaving"],
    ["Tobias", "painted", "painting"],
    ["config", "toml", "deploy"],
    ["Tuesday", "class", "the"],
    ["sunrise over the lake"],
    ["cafe", "Zoe", "resume"],
    ["café", "résumés"],
]


async def _fill(database: str) -> None:
    store = await open_store(database)
    try:
        await store.remember("ns", "s1", [TurnInput(t, speaker=s) for s, t in CONVERSATION])
        await store.remember("other", "s2", [TurnInput(t, speaker=s) for s, t in OTHER])
        gone = await store.remember("ns", "s3", [TurnInput("hiking hiking hiking dog lake")])
        await store.forget("ns", ids=gone.ids)
    finally:
        await store.close()


async def _searches(database: str, namespaces: tuple[str, ...]) -> list[list[tuple[int, float]]]:
    store = await open_store(database)
    try:
        return [await store.search_fts(fts_any(terms), Scope(namespaces), 20) for terms in QUERIES]
    finally:
        await store.close()


def _same(sqlite: list[list[tuple[int, float]]], postgres: list[list[tuple[int, float]]]) -> None:
    for terms, lite, pg in zip(QUERIES, sqlite, postgres, strict=True):
        assert [i for i, _ in pg] == [i for i, _ in lite], terms
        assert [s for _, s in pg] == pytest.approx([s for _, s in lite], rel=1e-9), terms


async def test_postgres_ranks_turns_with_fts5s_bm25_scores(tmp_path: Path, postgres_url: str):
    sqlite = str(tmp_path / "memory.db")
    await _fill(sqlite)
    await _fill(postgres_url)
    for namespaces in (("ns",), ("ns", "other")):
        _same(await _searches(sqlite, namespaces), await _searches(postgres_url, namespaces))


async def test_a_memory_copied_to_postgres_ranks_as_its_sqlite_original(
    tmp_path: Path, postgres_url: str
):
    sqlite = str(tmp_path / "memory.db")
    await _fill(sqlite)
    source, target = await open_store(sqlite, read_only=True), await open_store(postgres_url)
    try:
        await copy_memory(source, target, batch=4)  # several batches: totals added up
    finally:
        await source.close()
        await target.close()
    _same(await _searches(sqlite, ("ns",)), await _searches(postgres_url, ("ns",)))


def test_the_bm25_statement_takes_the_phrases_scope_and_limit_as_parameters():
    statement, params = bm25_search(["new york", "lake"], Scope(("ns",), session_id="s1"), 7)
    assert statement.count("%s") == len(params)
    assert params == [["new york", "lake"], "ns", "s1", "new york", "lake", 7]
    assert "ORDER BY score DESC, m.id LIMIT %s" in statement


async def test_a_database_of_schema_version_1_is_parsed_again_and_ranks_as_sqlite(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
):
    from smartsearch_mcp.store import postgres, postgres_open
    from smartsearch_mcp.store.postgres_schema import MIGRATIONS

    with monkeypatch.context() as patch:  # the first release's schema
        patch.setattr(postgres_open, "MIGRATIONS", MIGRATIONS[:1])
        patch.setattr(postgres, "MIGRATIONS", MIGRATIONS[:1])
        await _fill(postgres_url)
    sqlite = str(tmp_path / "memory.db")
    await _fill(sqlite)
    store = await open_store(postgres_url)  # migrates
    try:
        assert await store.schema_version() == len(MIGRATIONS)
        assert await store.integrity_check() == []
    finally:
        await store.close()
    _same(await _searches(sqlite, ("ns", "other")), await _searches(postgres_url, ("ns", "other")))


async def test_full_text_totals_that_disagree_with_the_table_are_reported_and_still_rank(
    postgres_url: str,
):
    import psycopg

    await _fill(postgres_url)
    scope = Scope(("ns", "other"))
    healthy = await _searches(postgres_url, scope.namespaces)
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute("UPDATE store_changes SET turns = 0, tokens = 0")
    store = await open_store(postgres_url)
    try:
        assert any("full-text statistics" in p for p in await store.integrity_check())
        for terms, found in zip(QUERIES, healthy, strict=True):
            hits = await store.search_fts(fts_any(terms), scope, 20)
            assert {i for i, _ in hits} == {i for i, _ in found}
    finally:
        await store.close()
