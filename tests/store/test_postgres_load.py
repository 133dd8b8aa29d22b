"""Many servers, one PostgreSQL database: 8 stdio server processes remembering 1,000 turns
each while recalling — every acknowledged turn stored exactly once, no error; and a writer
killed with SIGKILL mid-call loses only what was not acknowledged (a call is all or nothing).
"""

from __future__ import annotations

import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from servers import http_server, stdio_server, write_lexical_config

from smartsearch_mcp.store import open_store

pytestmark = [pytest.mark.anyio, pytest.mark.stress]

SERVERS = 8
TURNS_PER_SERVER = 1_000
BATCH = 50
TOPICS = ["hiking", "piano", "taxes", "garden", "chess", "sailing", "baking", "robots"]


def _batch(server: int, batch: int) -> list[dict[str, Any]]:
    return [
        {
            "text": f"server {server} turn {i}: notes about {TOPICS[(server + i) % len(TOPICS)]}",
            "speaker": f"user{server}",
            "timestamp": f"2024-0{1 + server % 9}-1{i % 10}T10:{i % 60:02d}:00",
        }
        for i in range(batch * BATCH, (batch + 1) * BATCH)
    ]


async def _stored(url: str) -> dict[str, list[int]]:
    store = await open_store(url)
    try:
        by_text: dict[str, list[int]] = {}
        async for turn in store.iter_turns():
            by_text.setdefault(turn.text, []).append(turn.id)
        assert await store.integrity_check() == []
    finally:
        await store.close()
    return by_text


async def test_eight_server_processes_on_one_database_store_every_acknowledged_turn_once(
    postgres_url: str, tmp_path: Path
) -> None:
    config = write_lexical_config(tmp_path)
    acknowledged: dict[str, int] = {}
    errors: list[str] = []
    recalls = 0

    async def server(number: int) -> None:
        nonlocal recalls
        with (tmp_path / f"server-{number}.log").open("w") as errlog:
            transport = stdio_client(stdio_server(postgres_url, config), errlog=errlog)
            async with Client(transport) as client:
                for batch in range(TURNS_PER_SERVER // BATCH):
                    turns = _batch(number, batch)
                    # all servers write into one shared session, and one of their own
                    session = "shared" if batch % 2 else f"server-{number}"
                    stored = await client.call_tool(
                        "remember", {"turns": turns, "session_id": session}
                    )
                    if stored.is_error:
                        errors.append(f"server {number} remember: {stored.content[0].text}")
                        continue
                    ids = stored.structured_content["ids"]
                    acknowledged.update(zip((t["text"] for t in turns), ids, strict=True))
                    topic = TOPICS[batch % len(TOPICS)]
                    found = await client.call_tool(
                        "recall", {"query": f"notes about {topic}", "max_tokens": 300}
                    )
                    if found.is_error:
                        errors.append(f"server {number} recall: {found.content[0].text}")
                    elif not found.structured_content["passages"]:
                        errors.append(f"server {number} recall found nothing about {topic}")
                    else:
                        recalls += 1

    started = time.perf_counter()
    try:
        with anyio.fail_after(900):
            async with anyio.create_task_group() as group:
                for n in range(SERVERS):
                    group.start_soon(server, n)
    except Exception as exc:  # a server died or hung: what it said is the diagnosis
        raise AssertionError(f"a server failed; their stderr:\n{_logs(tmp_path)}") from exc
    elapsed = time.perf_counter() - started

    assert errors == []
    assert len(acknowledged) == SERVERS * TURNS_PER_SERVER
    assert recalls == SERVERS * TURNS_PER_SERVER // BATCH
    by_text = await _stored(postgres_url)
    assert sum(len(ids) for ids in by_text.values()) == SERVERS * TURNS_PER_SERVER
    for text, turn_id in acknowledged.items():
        assert by_text.get(text) == [turn_id], text
    logs = _logs(tmp_path)
    assert "deadlock" not in logs.lower() and "traceback" not in logs.lower(), logs
    print(f"{SERVERS} servers x {TURNS_PER_SERVER} turns in {elapsed:.0f}s")


def _logs(directory: Path) -> str:
    return "".join(
        f"--- {p.name}\n{p.read_text(errors='replace')}"
        for p in sorted(directory.glob("server-*.log"))
    )


@dataclass
class KillRound:
    number: int
    kill_after: int
    acknowledged: dict[str, int] = field(default_factory=dict)  # text -> id
    sent: set[str] = field(default_factory=set)
    batches: int = 0
    killed: anyio.Event = field(default_factory=anyio.Event)


async def _write_until_killed(
    url: str, client: int, state: KillRound, process: subprocess.Popen[bytes]
) -> None:
    """Remember 200-turn calls until the server dies; SIGKILL it once `state.kill_after`
    calls were acknowledged (by any client), while the other clients are mid-call."""
    try:
        async with Client(url) as session:
            for batch in range(10_000):
                turns = [
                    {"text": f"r{state.number} c{client} b{batch} t{i} about the garden"}
                    for i in range(200)
                ]
                state.sent.update(t["text"] for t in turns)
                result = await session.call_tool("remember", {"turns": turns})
                assert not result.is_error, result.content
                ids = result.structured_content["ids"]
                state.acknowledged.update(zip((t["text"] for t in turns), ids, strict=True))
                state.batches += 1
                if state.batches >= state.kill_after:
                    process.kill()
                    state.killed.set()
    except Exception:
        assert state.killed.is_set()  # only the kill may end a client


async def test_a_writer_killed_mid_call_loses_only_unacknowledged_turns(
    postgres_url: str, tmp_path: Path
) -> None:
    config = write_lexical_config(tmp_path)
    rng = random.Random(7)
    acknowledged: dict[str, int] = {}
    sent: set[str] = set()
    for number in range(3):
        state = KillRound(number, kill_after=rng.randint(3, 8))
        async with http_server(postgres_url, config) as (base, process):
            with anyio.fail_after(300):
                async with anyio.create_task_group() as group:
                    for client in range(3):
                        group.start_soon(_write_until_killed, f"{base}/mcp", client, state, process)
            assert process.wait(timeout=30) == -9
        acknowledged.update(state.acknowledged)
        sent.update(state.sent)
        by_text = await _stored(postgres_url)
        for text, turn_id in acknowledged.items():
            assert by_text.get(text) == [turn_id], f"acknowledged turn lost: {text}"
        assert all(len(ids) == 1 for ids in by_text.values())  # nothing doubled
        assert set(by_text) <= sent
        # a call is one transaction: its 200 turns are there together or not at all
        per_call: dict[str, int] = {}
        for text in by_text:
            call = text.split(" t")[0]
            per_call[call] = per_call.get(call, 0) + 1
        assert set(per_call.values()) == {200}
    assert len(acknowledged) >= 3 * 3 * 200
