"""Crash safety: a server or an import killed with SIGKILL mid-write. After reopening, SQLite's
integrity check passes, the full-text index agrees with the turns, and every turn whose
`remember` returned before the kill is there. Acknowledged means durable."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from mcp import Client
from servers import cli_command, http_server, run_cli, subprocess_env, write_lexical_config

from smartsearch_mcp.store import SQLiteStore

pytestmark = [pytest.mark.anyio, pytest.mark.stress]

ROUNDS = 4
CLIENTS = 4
BATCH = 200
FILLER = "the quarterly garden report mentions tomatoes basil and a leaking hose " * 4


@dataclass
class Round:
    kill_after: int
    acknowledged: dict[str, int] = field(default_factory=dict)  # text -> id
    batches: int = 0
    killed: anyio.Event = field(default_factory=anyio.Event)


def _turns(round_no: int, client: int, batch: int) -> list[dict[str, str]]:
    return [
        {"text": f"uid{round_no}x{client}x{batch}x{i} {FILLER}", "speaker": f"c{client}"}
        for i in range(BATCH)
    ]


async def _check_reopened(db: Path, acknowledged: dict[str, int]) -> int:
    """Integrity, FTS agreement and every acknowledged turn present; returns the turn count."""
    store = await SQLiteStore.open(db)
    try:
        assert await store.integrity_check() == []
        stored = {turn.text: turn.id async for turn in store.iter_turns()}
    finally:
        await store.close()
    for text, turn_id in acknowledged.items():
        assert stored.get(text) == turn_id, f"acknowledged turn lost: {text[:30]}"
    with closing(sqlite3.connect(db)) as raw:
        (fts_rows,) = raw.execute("SELECT COUNT(*) FROM turns_fts").fetchone()
        assert fts_rows == len(stored)
        # A sample of the acknowledged turns is found through the index by its unique token.
        for text, turn_id in random.Random(0).sample(
            sorted(acknowledged.items()), min(200, len(acknowledged))
        ):
            token = text.split()[0]
            hits = raw.execute(
                "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?", (f'"{token}"',)
            ).fetchall()
            assert hits == [(turn_id,)], token
    return len(stored)


async def _client_until_killed(
    url: str, round_no: int, client: int, state: Round, process: subprocess.Popen[bytes]
) -> None:
    """Remember batches until the server dies; SIGKILL it after `state.kill_after` batches
    were acknowledged (by any client), while the other clients are still writing."""
    try:
        async with Client(url) as session:
            for batch in range(10_000):
                turns = _turns(round_no, client, batch)
                result = await session.call_tool("remember", {"turns": turns})
                assert not result.is_error, result.content
                ids = result.structured_content["ids"]
                state.acknowledged.update(zip((t["text"] for t in turns), ids, strict=True))
                state.batches += 1
                if state.batches >= state.kill_after:
                    process.kill()
                    state.killed.set()
    except Exception:
        # The server was killed under this client: only what was acknowledged counts.
        assert state.killed.is_set()


async def test_a_server_killed_mid_import_keeps_every_acknowledged_turn(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    config = write_lexical_config(tmp_path)
    rng = random.Random(5)
    acknowledged: dict[str, int] = {}
    for round_no in range(ROUNDS):
        state = Round(kill_after=rng.randint(6, 16))
        async with http_server(db, config) as (base, process):
            with anyio.fail_after(300):
                async with anyio.create_task_group() as group:
                    for client in range(CLIENTS):
                        group.start_soon(
                            _client_until_killed, f"{base}/mcp", round_no, client, state, process
                        )
            assert process.wait(timeout=30) == -9
        assert state.batches >= state.kill_after
        acknowledged.update(state.acknowledged)
        await _check_reopened(db, acknowledged)
    assert len(acknowledged) >= ROUNDS * 6 * BATCH


def _write_import_file(path: Path, sessions: int, turns_per_session: int) -> int:
    with path.open("w") as out:
        for s in range(sessions):
            for t in range(turns_per_session):
                line = {"session_id": f"s{s}", "text": f"uid{s}x{t} {FILLER}", "speaker": "me"}
                out.write(json.dumps(line) + "\n")
    return sessions * turns_per_session


async def test_an_import_killed_midway_leaves_whole_sessions_and_resumes(tmp_path: Path) -> None:
    db = tmp_path / "import.db"
    source = tmp_path / "big.jsonl"
    per_session = 250
    total = _write_import_file(source, sessions=160, turns_per_session=per_session)
    config = write_lexical_config(tmp_path)
    args = ["import", str(source), "--format", "jsonl", "--no-progress", "--db", str(db)]
    process = subprocess.Popen(
        [*cli_command(*args), "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=subprocess_env(),
    )
    try:
        with anyio.fail_after(120):
            while _committed_turns(db) < 5 * per_session:
                assert process.poll() is None, "the import finished before it could be killed"
                await anyio.sleep(0.05)
        process.kill()
        assert process.wait(timeout=30) == -9
    finally:
        if process.poll() is None:
            process.kill()
    stored = await _check_reopened(db, {})
    assert 0 < stored < total
    # Each session went in one transaction: the kill left whole sessions, never half of one.
    with closing(sqlite3.connect(db)) as raw:
        counts = [c for (c,) in raw.execute("SELECT COUNT(*) FROM turns GROUP BY session_id")]
    assert set(counts) == {per_session}

    again = run_cli([*args, "--config", str(config)], timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"({stored} duplicates skipped)" in again.stderr
    assert await _check_reopened(db, {}) == total


def _committed_turns(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)) as raw:
            return int(raw.execute("SELECT COUNT(*) FROM turns").fetchone()[0])
    except sqlite3.OperationalError:  # not created yet
        return 0
