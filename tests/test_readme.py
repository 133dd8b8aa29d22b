"""The README documents every tool, prompt and the server by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from smartsearch_mcp.server import create_server

pytestmark = pytest.mark.anyio

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


async def test_every_tool_prompt_and_the_server_name_appear_in_the_readme(tmp_path: Path):
    server = create_server(db_path=tmp_path / "m.db")
    async with Client(server) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        prompts = [p.name for p in (await client.list_prompts()).prompts]
    assert tools and prompts
    missing = [name for name in [*tools, *prompts] if f"`{name}" not in README]
    assert not missing, f"document these in README.md: {missing}"
    assert f"`{server.name}`" in README


async def test_the_memory_prompt_tells_the_agent_to_recall_and_cite_dates(tmp_path: Path):
    async with Client(create_server(db_path=tmp_path / "m.db")) as client:
        prompt = await client.get_prompt("use-memory")
    text = prompt.messages[0].content.text
    assert "`recall`" in text and "Cite the date" in text and "`grep`" in text
