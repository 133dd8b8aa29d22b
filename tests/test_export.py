"""Exporting: one line per turn from a consistent snapshot, a turn stamped at storing says
so, and an export file is its owner's only, complete or absent (smartsearch_mcp/export.py)."""

from __future__ import annotations

import dataclasses
import io
import json
import stat
from pathlib import Path

import anyio
import pytest

from smartsearch_mcp.export import export_record, export_turns, private_file, read_snapshot
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import TurnInput


async def _fill(db: Path) -> None:
    store = await SQLiteStore.open(db)
    try:
        await store.remember("a", "s1", [TurnInput("dated", timestamp="2025-01-02T03:04:05Z")])
        await store.remember("a", "s1", [TurnInput("undated")])
        await store.remember("b", "s2", [TurnInput("elsewhere")])
    finally:
        await store.close()


def test_an_export_of_a_namespace_writes_its_turns_and_marks_those_dated_when_stored(
    tmp_path: Path,
):
    db = tmp_path / "m.db"

    async def run() -> tuple[int, str]:
        await _fill(db)
        out = io.StringIO()
        async with read_snapshot(str(db), 1000) as snapshot:
            result = await export_turns(snapshot, "a", out)
        assert result.namespaces is None  # turns were found: nothing to point at
        return result.count, out.getvalue()

    count, text = anyio.run(run)
    records = [json.loads(line) for line in text.splitlines()]
    assert count == 2 and [r["text"] for r in records] == ["dated", "undated"]
    assert "timestamp_generated" not in records[0]
    assert records[1]["timestamp_generated"] is True
    assert records[0]["namespace"] == "a" and records[0]["timestamp"].startswith("2025-01-02")


def test_an_empty_export_of_a_namespace_says_which_namespaces_hold_turns(tmp_path: Path):
    db = tmp_path / "m.db"

    async def run() -> tuple[int, dict[str, int] | None]:
        await _fill(db)
        async with read_snapshot(str(db), 1000) as snapshot:
            result = await export_turns(snapshot, "nowhere", io.StringIO())
        return result.count, result.namespaces

    assert anyio.run(run) == (0, {"a": 2, "b": 1})


def test_an_export_of_every_namespace_reads_all_turns(tmp_path: Path):
    db = tmp_path / "m.db"

    async def run() -> int:
        await _fill(db)
        async with read_snapshot(str(db), 1000) as snapshot:
            return (await export_turns(snapshot, None, io.StringIO())).count

    assert anyio.run(run) == 3


def test_the_snapshot_leaves_the_database_as_it_was(tmp_path: Path):
    db = tmp_path / "m.db"

    async def run() -> None:
        await _fill(db)
        before = db.read_bytes()
        async with read_snapshot(str(db), 1000) as snapshot:
            await snapshot.remember("a", "s9", [TurnInput("only in the snapshot")])
        assert db.read_bytes() == before

    anyio.run(run)


def test_a_record_holds_every_stored_field_of_the_turn(tmp_path: Path):
    db = tmp_path / "m.db"

    async def run() -> dict:
        await _fill(db)
        store = await SQLiteStore.open(db)
        try:
            turn = (await store.session_turns("a", "s1"))[0]
        finally:
            await store.close()
        return {"record": export_record(turn), "turn": turn}

    got = anyio.run(run)
    assert got["record"] == dataclasses.asdict(got["turn"])  # given a timestamp: no marker


def test_a_private_file_is_its_owners_only_and_replaces_the_target_when_complete(
    tmp_path: Path,
):
    target = tmp_path / "out.jsonl"
    target.write_text("old")
    with private_file(target) as out:
        out.write("new\n")
        assert target.read_text() == "old"  # not yet moved over it
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_private_file_that_fails_half_way_leaves_nothing_behind(tmp_path: Path):
    target = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError), private_file(target) as out:
        out.write("partial")
        raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []
