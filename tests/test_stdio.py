"""The server as a client launches it: a subprocess speaking MCP over stdio."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from servers import http_server

from smartsearch_mcp.importers.locomo import load_locomo

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FIXTURES = Path(__file__).parent / "fixtures"


def _conversation_turns() -> tuple[list[dict], dict[str, str]]:
    """A conversation of our own in LoCoMo's format as `remember` turns, and dia_id -> text."""
    (conversation,) = load_locomo(FIXTURES / "locomo" / "26.json")
    turns = []
    for session in conversation.sessions:
        for turn in session.turns:
            turns.append(
                {
                    "text": turn.text,
                    "speaker": turn.speaker,
                    "timestamp": turn.timestamp,
                    "metadata": {**(turn.metadata or {}), "session": session.session_id},
                }
            )
    return turns, {t["metadata"]["dia_id"]: t["text"] for t in turns}


def _server(tmp_path: Path, config: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "smartsearch_mcp", "serve", "--db", str(tmp_path / "m.db"), "--config", config],
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )


async def test_a_client_over_stdio_remembers_a_conversation_recalls_reads_and_forgets(tmp_path):
    turns, _ = _conversation_turns()
    with anyio.fail_after(300):
        started = time.perf_counter()
        async with Client(_server(tmp_path, "offline")) as client:
            handshake = time.perf_counter() - started
            stored = await client.call_tool("remember", {"turns": turns, "session_id": "locomo-26"})
            assert not stored.is_error, stored.content
            ids = stored.structured_content["ids"]
            assert len(ids) == len(turns) and stored.structured_content["duplicates_skipped"] == 0

            found = await client.call_tool(
                "recall",
                {"query": "When did Caroline join the pottery class?", "max_tokens": 1500},
            )
            assert not found.is_error, found.content
            out = found.structured_content
            assert 0 < out["tokens_used"] <= 1500
            by_id = {turn_id: turn for turn_id, turn in zip(ids, turns, strict=True)}
            for passage in out["passages"]:
                assert passage["id"] in by_id
                assert passage["text"] in by_id[passage["id"]]["text"]
            assert any("pottery class" in p["text"] for p in out["passages"])

            stats = json.loads((await client.read_resource("memory://stats")).contents[0].text)
            assert stats["turns"] == len(turns)
            sessions = json.loads(
                (await client.read_resource("memory://sessions")).contents[0].text
            )
            assert [s["id"] for s in sessions] == ["locomo-26"]
            transcript = json.loads(
                (await client.read_resource("memory://sessions/locomo-26")).contents[0].text
            )
            assert [t["text"] for t in transcript["turns"]] == [t["text"] for t in turns]
            one = json.loads(
                (await client.read_resource(f"memory://turns/{ids[5]}")).contents[0].text
            )
            assert one["text"] == turns[5]["text"] and one["metadata"] == turns[5]["metadata"]

            gone = await client.call_tool("forget", {"session_id": "locomo-26"})
            assert len(gone.structured_content["deleted_turn_ids"]) == len(turns)
            after = await client.call_tool("recall", {"query": "pottery class"})
            assert after.structured_content["passages"] == []
    # Models load lazily: the handshake must not wait for them.
    assert handshake < 10, f"handshake took {handshake:.1f}s"


async def test_stdout_carries_only_protocol_messages_even_with_debug_logging(tmp_path):
    params = _server(tmp_path, "offline")
    params.args += ["--log-level", "debug"]
    with anyio.fail_after(120):
        async with Client(params) as client:
            result = await client.call_tool("remember", {"text": "a note"})
            assert not result.is_error
            recalled = await client.call_tool("recall", {"query": "note"})
            assert not recalled.is_error


async def test_streamable_http_transport_serves_the_same_tools(tmp_path):
    async with http_server(tmp_path / "m.db", Path("offline")) as (base, process):
        with anyio.fail_after(120):
            async with Client(f"{base}/mcp") as client:
                stored = await client.call_tool(
                    "remember", {"text": "The wifi password is tulip42."}
                )
                assert not stored.is_error
                found = await client.call_tool("recall", {"query": "wifi password"})
                assert "tulip42" in found.structured_content["passages"][0]["text"]
    assert process.stdout is not None and process.stdout.read() == b""
