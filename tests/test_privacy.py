"""Privacy: the database and its WAL files are private to the user, and `export` takes a
consistent snapshot while a server is writing."""

from __future__ import annotations

import functools
import json
import os
import stat
from pathlib import Path

import anyio
import pytest
from mcp import Client
from servers import http_server, run_cli, write_lexical_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

BATCH = 100


async def test_export_while_a_server_writes_is_a_committed_state(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    config = write_lexical_config(tmp_path)
    exports: list[list[dict]] = []
    done = anyio.Event()
    batches = 0

    def in_session(turns: list[dict]) -> int:
        return sum(t["session_id"] == "s" for t in turns)

    async def write(client: Client) -> None:
        nonlocal batches

        async def one() -> None:
            nonlocal batches
            turns = [{"text": f"batch {batches} turn {i}"} for i in range(BATCH)]
            stored = await client.call_tool("remember", {"turns": turns, "session_id": "s"})
            assert not stored.is_error, stored.content
            batches += 1

        # At least 30 batches, and on until an export holds some of them, then one more: so
        # a snapshot is always taken while writes are still coming, however fast the writes
        # or slow the CLI's start (with a fixed count, all could land before one export).
        while batches < 30 or not any(in_session(turns) for turns in exports):
            await one()
        await one()
        done.set()

    async def export() -> None:
        while not done.is_set():
            out = tmp_path / f"export-{len(exports)}.jsonl"
            args = ["export", "--all", "-o", str(out), "--db", str(db), "--config", str(config)]
            result = await anyio.to_thread.run_sync(functools.partial(run_cli, args, timeout=120))
            assert result.returncode == 0, result.stderr
            exports.append([json.loads(line) for line in out.read_text().splitlines()])

    async with http_server(db, config) as (base, _), Client(f"{base}/mcp") as client:
        await client.call_tool("remember", {"text": "first note", "session_id": "warm-up"})
        for name in ("m.db", "m.db-wal", "m.db-shm"):
            mode = stat.S_IMODE(os.stat(tmp_path / name).st_mode)
            assert mode == 0o600, f"{name} has mode {oct(mode)}"
        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                group.start_soon(write, client)
                group.start_soon(export)
    # At least one snapshot was taken while writes were still coming.
    assert any(0 < in_session(turns) < batches * BATCH for turns in exports)
    for turns in exports:
        # Each remember commits a whole batch: a snapshot holds whole batches, in order.
        session = [t["text"] for t in turns if t["session_id"] == "s"]
        whole = len(session) // BATCH
        assert session == [f"batch {b} turn {i}" for b in range(whole) for i in range(BATCH)]
        assert sum(t["session_id"] == "warm-up" for t in turns) == 1
