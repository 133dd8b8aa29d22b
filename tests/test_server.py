"""The MCP server through an in-process client: tools, resources, errors."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server

pytestmark = pytest.mark.anyio

# Lexical ranking only: these tests are about the server, not the models.
LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)

TURNS = [
    {
        "text": "I adopted a puppy named Biscuit last week!",
        "speaker": "Ann",
        "role": "user",
        "timestamp": "2023-05-08T10:00:00",
    },
    {
        "text": "Congratulations! What breed is Biscuit?",
        "speaker": "Bot",
        "role": "assistant",
        "timestamp": "2023-05-08T10:00:05",
    },
    {
        "text": "A golden retriever. We go hiking on weekends.",
        "speaker": "Ann",
        "role": "user",
        "timestamp": "2023-05-08T10:01:00",
        "metadata": {"mood": "happy"},
    },
]


@pytest.fixture
def server(database: str):
    """The server on SQLite and on PostgreSQL (tests/conftest.py, `database`)."""
    return create_server(LEXICAL, database)


async def _resource_json(client: Client, uri: str):
    result = await client.read_resource(uri)
    return json.loads(result.contents[0].text)


async def test_tools_are_listed_with_output_schemas_and_annotations(server):
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"remember", "recall", "forget", "grep", "timeline"}
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["forget"].annotations.destructive_hint is True
    for name in tools:
        assert tools[name].output_schema is not None, name
        assert len(tools[name].description or "") > 100, name
    assert "passages" in tools["recall"].output_schema["properties"]


async def test_remember_recall_forget_round_trip(server):
    with anyio.fail_after(30):
        async with Client(server) as client:
            stored = await client.call_tool("remember", {"turns": TURNS, "session_id": "chat-1"})
            assert not stored.is_error
            ids = stored.structured_content["ids"]
            assert len(ids) == 3 and stored.structured_content["session_id"] == "chat-1"

            found = await client.call_tool("recall", {"query": "What is the puppy's name?"})
            assert not found.is_error
            passages = found.structured_content["passages"]
            assert passages and passages[0]["id"] in ids
            assert any("Biscuit" in p["text"] for p in passages)
            assert found.structured_content["rankers"]
            text = found.content[0].text
            assert "Session chat-1" in text and "2023-05-08" in text

            gone = await client.call_tool("forget", {"session_id": "chat-1"})
            assert sorted(gone.structured_content["deleted_turn_ids"]) == sorted(ids)
            after = await client.call_tool("recall", {"query": "puppy Biscuit"})
            assert after.structured_content["passages"] == []


async def test_text_shortcut_stores_a_single_note(server):
    async with Client(server) as client:
        r = await client.call_tool("remember", {"text": "My passport expires in 2027."})
        assert not r.is_error and len(r.structured_content["ids"]) == 1
        turn = await _resource_json(client, f"memory://turns/{r.structured_content['ids'][0]}")
        assert turn["text"] == "My passport expires in 2027."


async def test_resources_show_stats_sessions_transcripts_and_turns(server):
    async with Client(server) as client:
        await client.call_tool("remember", {"turns": TURNS, "session_id": "chat-1"})
        await client.call_tool(
            "remember", {"text": "work note", "namespace": "work", "session_id": "w1"}
        )
        stats = await _resource_json(client, "memory://stats")
        assert stats["turns"] == 4 and stats["namespaces"] == {"default": 3, "work": 1}
        sessions = await _resource_json(client, "memory://sessions")
        assert {(s["namespace"], s["id"]) for s in sessions} == {
            ("default", "chat-1"),
            ("work", "w1"),
        }
        work = await _resource_json(client, "memory://namespaces/work/sessions")
        assert [s["id"] for s in work] == ["w1"]
        transcript = await _resource_json(client, "memory://sessions/chat-1")
        assert [t["text"] for t in transcript["turns"]] == [t["text"] for t in TURNS]
        assert transcript["turns"][2]["metadata"] == {"mood": "happy"}
        other = await _resource_json(client, "memory://sessions/w1?namespace=work")
        assert other["turns"][0]["text"] == "work note"
        templates = await client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} >= {
            "memory://sessions/{session_id}{?namespace}",
            "memory://turns/{turn_id}",
        }


async def test_namespaces_keep_memories_apart(server):
    async with Client(server) as client:
        await client.call_tool("remember", {"text": "secret project Zephyr", "namespace": "work"})
        home = await client.call_tool("recall", {"query": "Zephyr"})
        work = await client.call_tool("recall", {"query": "Zephyr", "namespace": "work"})
    assert home.structured_content["passages"] == []
    assert work.structured_content["passages"][0]["namespace"] == "work"


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        ("remember", {"turns": []}, "at least one turn"),
        ("remember", {"turns": [{"text": "x", "role": "wizard"}]}, "role"),
        ("remember", {"turns": [{"text": "x", "timestamp": "someday"}]}, "timestamp"),
        ("remember", {}, "either"),
        ("recall", {"query": "  "}, "non-empty"),
        ("recall", {"query": "x", "max_tokens": -5}, "max_tokens"),
        ("recall", {"query": "x", "since": "garbage"}, "since"),
        ("forget", {"ids": [424242]}, "424242"),
        ("forget", {}, "confirm=true"),
        ("forget", {"session_id": "nope"}, "no session"),
    ],
)
async def test_bad_arguments_are_tool_errors_with_actionable_messages(
    server, tool, arguments, message
):
    async with Client(server) as client:
        await client.call_tool("remember", {"text": "keep me"})
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        assert message in result.content[0].text
        # The session survives and nothing stored changed.
        stats = await _resource_json(client, "memory://stats")
        assert stats["turns"] == 1


async def test_forgetting_a_namespace_needs_confirm(server):
    async with Client(server) as client:
        await client.call_tool("remember", {"turns": TURNS})
        refused = await client.call_tool("forget", {})
        assert refused.is_error and "3 turns" in refused.content[0].text
        done = await client.call_tool("forget", {"confirm": True})
        assert len(done.structured_content["deleted_turn_ids"]) == 3


async def test_unknown_resources_are_clear_errors(server):
    from mcp import MCPError

    async with Client(server) as client:
        with pytest.raises(MCPError, match="no session"):
            await client.read_resource("memory://sessions/missing")
        with pytest.raises(MCPError, match="no turn"):
            await client.read_resource("memory://turns/999")


async def test_recall_respects_the_token_budget(server):
    long_turns = [{"text": f"hiking trip number {i} " + "word " * 80} for i in range(40)]
    async with Client(server) as client:
        await client.call_tool("remember", {"turns": long_turns})
        result = await client.call_tool("recall", {"query": "hiking trip", "max_tokens": 300})
    out = result.structured_content
    assert 0 < out["tokens_used"] <= 300 and out["max_tokens"] == 300
    assert out["passages"]


# NUL aside: PostgreSQL text cannot hold it (refused there; SQLite keeps it: test_store.py).
_TEXT = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"),
    min_size=1,
    max_size=300,
).filter(str.strip)
_TURN = st.fixed_dictionaries(
    {"text": _TEXT},
    optional={
        "speaker": st.text(
            st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=30
        ),
        "role": st.sampled_from(["user", "assistant", "other"]),
        "metadata": st.dictionaries(
            st.text(max_size=10),
            st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
            max_size=3,
        ),
    },
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(turns=st.lists(_TURN, min_size=1, max_size=6))
async def test_whatever_is_remembered_is_returned_verbatim_by_the_resources(server, turns):
    async with Client(server) as client:
        stored = await client.call_tool("remember", {"turns": turns})
        assert not stored.is_error, stored.content
        ids = stored.structured_content["ids"]
        session = stored.structured_content["session_id"]
        transcript = await _resource_json(client, f"memory://sessions/{session}")
        by_id = {t["id"]: t for t in transcript["turns"]}
        first_sent: dict[int, dict] = {}
        for turn_id, sent in zip(ids, turns, strict=True):
            # A re-sent turn (the same call again) maps to the stored id: keep the first.
            first_sent.setdefault(turn_id, sent)
        for turn_id, sent in first_sent.items():
            got = await _resource_json(client, f"memory://turns/{turn_id}")
            assert got == by_id[turn_id]
            assert got["text"] == sent["text"]
            assert got["metadata"] == sent.get("metadata", {})
            if sent.get("speaker", "").strip():
                assert got["speaker"] == sent["speaker"].strip()


@pytest.mark.parametrize(
    "arguments",
    [
        {"ids": [True]},  # lax validation read it as turn 1
        {"ids": ["2"]},  # ... and this as turn 2
        {"ids": [1.0]},
        {"ids": "[true]"},  # a JSON string the SDK parses first: still no integer
        {"confirm": "yes"},  # each of these wiped the namespace
        {"confirm": "on"},
        {"confirm": "true"},
        {"confirm": 1},
        {"ids": [], "confirm": True},  # an empty list is not "no ids"
    ],
)
async def test_forget_takes_only_json_integers_and_booleans_and_deletes_nothing_else(
    server, arguments
):
    async with Client(server) as client:
        await client.call_tool("remember", {"turns": TURNS})
        result = await client.call_tool("forget", arguments)
        stats = await _resource_json(client, "memory://stats")
    assert result.is_error
    text = result.content[0].text
    assert "valid integer" in text or "valid boolean" in text or "empty list" in text, text
    assert stats["turns"] == 3


async def test_remember_takes_a_boolean_timestamp_as_an_error_not_as_1970(server):
    async with Client(server) as client:
        result = await client.call_tool("remember", {"turns": [{"text": "x", "timestamp": True}]})
        tools = {t.name: t for t in (await client.list_tools()).tools}
        stats = await _resource_json(client, "memory://stats")
    assert result.is_error and "timestamp" in result.content[0].text
    assert stats["turns"] == 0
    # The published schemas still say what is accepted.
    forget_schema = tools["forget"].input_schema["properties"]
    assert forget_schema["confirm"]["type"] == "boolean"
    assert {"items": {"type": "integer"}, "type": "array"} in forget_schema["ids"]["anyOf"]


@pytest.mark.parametrize("turn_id", ["0", "²", "-1", "1.5", "99999999999999999999", "٣"])
async def test_a_turn_resource_with_a_bad_id_is_invalid_params(server, turn_id: str):
    from mcp import MCPError

    async with Client(server) as client:
        await client.call_tool("remember", {"turns": TURNS})
        with pytest.raises(MCPError, match="turn id must be an integer") as raised:
            await client.read_resource(f"memory://turns/{turn_id}")
    assert raised.value.error.code == -32602


async def test_recall_with_an_overlong_query_word_answers_and_says_it_was_not_searched(server):
    async with Client(server) as client:
        await client.call_tool("remember", {"turns": TURNS})
        result = await client.call_tool("recall", {"query": "Biscuit " + "x" * 9000})
    assert not result.is_error
    assert any("longer than 100 characters" in w for w in result.structured_content["warnings"])


def _benchmark_words() -> tuple[set[str], list[str]]:
    """The speakers' names and the questions of the benchmark conversations in the fixtures
    (and in the shared data, when it is there)."""
    from shared_data import shared_data_dir

    fixtures = Path(__file__).parent / "fixtures"
    files = [*fixtures.glob("locomo*/*.json"), *(shared_data_dir() / "locomo").glob("*.json")]
    names: set[str] = set()
    questions: list[str] = []
    for file in files:
        conversation = json.loads(file.read_text())
        names |= {conversation["speaker_a"], conversation["speaker_b"]}
        questions += [qa["question"] for qa in conversation["qa"]]
    return names, questions


async def test_what_agents_are_shown_quotes_no_benchmark_conversation(server):
    """Tool descriptions, their parameters, the instructions and the prompt use examples of
    their own: no LoCoMo speaker or question (a tuned-on benchmark leaking into every agent's
    context)."""
    import re

    from smartsearch_mcp.server import INSTRUCTIONS, MEMORY_PROMPT

    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    shown = "\n".join(
        [INSTRUCTIONS, MEMORY_PROMPT]
        + [f"{t.description}\n{json.dumps(t.input_schema)}" for t in tools]
    )
    names, questions = _benchmark_words()
    assert "Caroline" in names and questions  # the fixtures are there
    assert not [n for n in names if re.search(rf"\b{re.escape(n)}\b", shown)]
    assert not [q for q in questions if q.rstrip("?").lower() in shown.lower()]
