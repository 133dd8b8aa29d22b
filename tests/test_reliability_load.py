"""Many clients on one database file: separate stdio server processes and the clients of one
HTTP server, all remembering while the others recall. Every acknowledged turn must be stored
exactly once, and no client may ever see "database is locked"."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from servers import http_server, stdio_server, write_lexical_config

from smartsearch_mcp.store import SQLiteStore

pytestmark = [pytest.mark.anyio, pytest.mark.stress]

STDIO_CLIENTS = 8
HTTP_CLIENTS = 8
TURNS_PER_CLIENT = 1_000
BATCH = 50
TOPICS = ["hiking", "piano", "taxes", "garden", "chess", "sailing", "baking", "robots"]


@dataclass
class Tally:
    acknowledged: dict[str, int] = field(default_factory=dict)  # text -> id returned
    errors: list[str] = field(default_factory=list)
    recalls: int = 0


def _batch(client: int, batch: int) -> list[dict[str, Any]]:
    return [
        {
            "text": f"client {client} turn {i}: notes about {TOPICS[(client + i) % len(TOPICS)]}",
            "speaker": f"user{client}",
            "role": "user" if i % 2 == 0 else "assistant",
            "timestamp": f"2024-0{1 + client % 9}-1{i % 10}T10:{i % 60:02d}:00",
        }
        for i in range(batch * BATCH, (batch + 1) * BATCH)
    ]


async def _work(client: Client, number: int, tally: Tally) -> None:
    for batch in range(TURNS_PER_CLIENT // BATCH):
        turns = _batch(number, batch)
        stored = await client.call_tool(
            "remember", {"turns": turns, "session_id": f"client-{number}"}
        )
        if stored.is_error:
            tally.errors.append(f"client {number} remember: {stored.content[0].text}")
            continue
        for turn, turn_id in zip(turns, stored.structured_content["ids"], strict=True):
            tally.acknowledged[turn["text"]] = turn_id
        found = await client.call_tool(
            "recall", {"query": f"notes about {TOPICS[batch % len(TOPICS)]}", "max_tokens": 300}
        )
        if found.is_error:
            tally.errors.append(f"client {number} recall: {found.content[0].text}")
        else:
            assert found.structured_content["passages"], "recall found nothing it should"
            tally.recalls += 1


async def test_sixteen_clients_in_nine_processes_lose_no_write_and_never_see_a_lock(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    config = write_lexical_config(tmp_path)
    tally = Tally()
    logs = [tmp_path / f"stdio-{n}.log" for n in range(STDIO_CLIENTS)]
    http_log = tmp_path / "http.log"

    async def stdio_worker(number: int) -> None:
        with logs[number].open("w") as errlog:
            transport = stdio_client(stdio_server(db, config), errlog=errlog)
            async with Client(transport) as client:
                await _work(client, number, tally)

    async def http_worker(url: str, number: int) -> None:
        async with Client(url) as client:
            await _work(client, number, tally)

    started = time.perf_counter()
    with http_log.open("wb") as http_err:
        async with http_server(db, config, stderr=http_err) as (base, _):
            with anyio.fail_after(900):
                async with anyio.create_task_group() as group:
                    for n in range(STDIO_CLIENTS):
                        group.start_soon(stdio_worker, n)
                    for n in range(HTTP_CLIENTS):
                        group.start_soon(http_worker, f"{base}/mcp", STDIO_CLIENTS + n)
    elapsed = time.perf_counter() - started

    assert tally.errors == []
    server_logs = "".join(p.read_text() for p in [*logs, http_log])
    assert "locked" not in server_logs.lower()
    clients = STDIO_CLIENTS + HTTP_CLIENTS
    assert len(tally.acknowledged) == clients * TURNS_PER_CLIENT
    assert tally.recalls == clients * TURNS_PER_CLIENT // BATCH

    store = await SQLiteStore.open(db)
    try:
        stored = [turn async for turn in store.iter_turns()]
        assert await store.integrity_check() == []
    finally:
        await store.close()
    by_text: dict[str, list[int]] = {}
    for turn in stored:
        by_text.setdefault(turn.text, []).append(turn.id)
    assert len(stored) == clients * TURNS_PER_CLIENT
    for text, turn_id in tally.acknowledged.items():
        assert by_text.get(text) == [turn_id], text
    print(f"{clients} clients x {TURNS_PER_CLIENT} turns in {elapsed:.0f}s")
