"""The timeline tool: turns in time order within a window, relative dates, bounded output."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import anyio
import pytest
from mcp import Client

from smartsearch_mcp import timeline as timeline_rules
from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server
from smartsearch_mcp.types import InputError

pytestmark = pytest.mark.anyio

LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)
REFERENCE = datetime(2024, 3, 15, 12, 0)


def test_relative_spans_give_their_start_for_since_and_their_end_for_until():
    since, until = timeline_rules.parse_window("yesterday", "yesterday", REFERENCE)
    assert since == datetime(2024, 3, 14) and until == datetime(2024, 3, 15)


def test_an_unreadable_date_or_an_empty_window_is_a_clear_error():
    with pytest.raises(InputError, match="since: cannot read"):
        timeline_rules.parse_window("whenever", None, REFERENCE)
    with pytest.raises(InputError, match="earlier than until"):
        timeline_rules.parse_window("2024-03-10", "2024-03-01", REFERENCE)


def test_limit_outside_the_allowed_range_is_rejected():
    for bad in (0, -1, timeline_rules.MAX_LIMIT + 1, True):
        with pytest.raises(InputError):
            timeline_rules.check_limit(bad)


@pytest.fixture
def server(tmp_path: Path):
    return create_server(LEXICAL, tmp_path / "memory.db", namespace="proj")


def _day_turns(day: int, count: int, session: str) -> dict:
    return {
        "session_id": session,
        "turns": [
            {"text": f"day {day} turn {i}", "role": "user",
             "timestamp": f"2024-03-{day:02d}T10:{i:02d}:00"}
            for i in range(count)
        ],
    }  # fmt: skip


async def test_timeline_lists_turns_in_time_order_across_sessions(server):
    with anyio.fail_after(30):
        async with Client(server) as client:
            await client.call_tool("remember", _day_turns(12, 2, "b"))
            await client.call_tool("remember", _day_turns(10, 2, "a"))
            await client.call_tool("remember", {"text": "elsewhere", "namespace": "other"})
            window = await client.call_tool(
                "timeline", {"since": "2024-03-10", "until": "2024-03-12T10:01:00"}
            )
            latest = await client.call_tool("timeline", {"limit": 3})
            first = await client.call_tool("timeline", {"since": "2024-03-01", "limit": 1})
    texts = [t["text"] for t in window.structured_content["turns"]]
    assert texts == ["day 10 turn 0", "day 10 turn 1", "day 12 turn 0"]
    assert window.structured_content["more"] is False
    latest_texts = [t["text"] for t in latest.structured_content["turns"]]
    assert latest_texts == ["day 10 turn 1", "day 12 turn 0", "day 12 turn 1"]
    assert latest.structured_content["more"] is True
    assert [t["text"] for t in first.structured_content["turns"]] == ["day 10 turn 0"]
    assert "## Session a [proj]" in window.content[0].text
    first_id = window.structured_content["turns"][0]["id"]
    assert f"[2024-03-10 10:00] user #{first_id}: day 10 turn 0" in window.content[0].text


async def test_timeline_filters_by_session_and_cuts_long_turns(server):
    with anyio.fail_after(30):
        async with Client(server) as client:
            await client.call_tool("remember", _day_turns(10, 2, "a"))
            await client.call_tool("remember", {"text": "x" * 5000, "session_id": "long"})
            only_a = await client.call_tool("timeline", {"session_id": "a"})
            long = await client.call_tool("timeline", {"session_id": "long"})
            bad = await client.call_tool("timeline", {"since": "the day the music died"})
    assert {t["session_id"] for t in only_a.structured_content["turns"]} == {"a"}
    turn = long.structured_content["turns"][0]
    assert len(turn["text"]) == timeline_rules.TEXT_CHARS and turn["text_truncated"]
    assert bad.is_error and "cannot read" in bad.content[0].text
