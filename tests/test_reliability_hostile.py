"""Hostile input through the tools and the CLI: FTS syntax, SQL fragments, NUL bytes, lone
surrogates, RTL and emoji, megabyte texts, absurd timestamps and budgets, unknown ids,
namespaces and sessions. Each call gives a correct result or a clear error; the session
survives; no stored turn changes (except those a successful remember adds)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from mcp import Client

from smartsearch_mcp.cli import main
from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server

pytestmark = pytest.mark.stress

# Both retrieval paths: grep over the turns and FTS5 MATCH (BM25 as ranker and candidates).
HOSTILE_CONFIG = Config().with_overrides(
    rank={"scorers": ["lexical", "bm25"]},
    nlp={"spacy_models": []},
    retrieval={"dense": False, "mode": "indexed", "bm25_candidates": 20},
)
SEED = [
    {"text": "I adopted a puppy named Biscuit", "speaker": "Ann", "timestamp": "2023-05-08"},
    {"text": "NEAR the lake, AND then OR not", "speaker": "Bo", "timestamp": "2023-05-09"},
    {"text": "emoji 🎉 and RTL שלום", "speaker": "Ann", "timestamp": "2023-05-10"},
]
FRAGMENTS = [
    '"', "'", "*", "NEAR", "NEAR(", "AND", "OR", "NOT", "(", ")", "-", ":", "^", "+",
    "text:", "speaker:", "{text}", "'; DROP TABLE turns; --", "' OR 1=1 --", '" OR "" = "',
    "); DELETE FROM turns; --", "%", "_", "\\", "\x00", "\ud800", "\udfff", "\ufeff",
    "\u202e", "\u200d", "שלום", "مرحبا", "🎉", "👩‍👩‍👧", "𝔘𝔫𝔦", "puppy", "Biscuit",
    "lake", "NULL", "\n", "\t", " ", "2023-05-08", "1e308",
]  # fmt: skip
HOSTILE_TEXT = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12).map("".join),
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=12).map(" ".join),
    st.text(st.characters(codec=None, categories=None), max_size=80),  # lone surrogates too
    st.text(max_size=200),
)
# Up to and just over the 1,000,000-character limit of a turn.
HUGE_TEXT = st.sampled_from([1, 1000, 999_999, 1_000_000, 1_000_001]).map(lambda n: "é" * n)
TIMESTAMP = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        ["", "0000-00-00", "9999-12-31T23:59:59", "10000-01-01", "-0001-01-01", "1e308",
         "2023-02-30", "24:61", "yesterday", "last week", "NaN", "2023-05-08T10:00:00+99:00"]
    ),
    HOSTILE_TEXT,
)  # fmt: skip
NAME = st.one_of(st.none(), HOSTILE_TEXT)
MAX_TOKENS = st.one_of(
    st.none(), st.integers(min_value=-(2**63), max_value=2**63), st.sampled_from([0, 15, 16])
)
TURN = st.fixed_dictionaries(
    {"text": st.one_of(HOSTILE_TEXT, HUGE_TEXT)},
    optional={
        "speaker": NAME,
        "role": st.one_of(st.none(), st.sampled_from(["user", "assistant", "AI", "root"])),
        "timestamp": TIMESTAMP,
        "metadata": st.one_of(
            st.none(), st.dictionaries(HOSTILE_TEXT, st.one_of(HOSTILE_TEXT, TIMESTAMP))
        ),
    },
)
REMEMBER = st.one_of(
    st.fixed_dictionaries(
        {"turns": st.lists(TURN, max_size=4)},
        optional={"session_id": NAME, "namespace": NAME},
    ),
    st.fixed_dictionaries({"text": st.one_of(HOSTILE_TEXT, HUGE_TEXT)}, optional={"turns": NAME}),
)
RECALL = st.fixed_dictionaries(
    {"query": st.one_of(HOSTILE_TEXT, HUGE_TEXT.map(lambda t: t[:20_000]))},
    optional={
        "max_tokens": MAX_TOKENS,
        "namespace": NAME,
        "session_id": NAME,
        "since": st.one_of(NAME, TIMESTAMP.map(str)),
        "until": st.one_of(NAME, TIMESTAMP.map(str)),
    },
)
UNKNOWN_ID = st.one_of(
    st.integers(min_value=-(2**63), max_value=0), st.integers(min_value=10**6, max_value=2**63)
)
FORGET = st.fixed_dictionaries(
    # Never the seeded namespace: forgetting it with confirm=true is a legitimate deletion.
    {"namespace": HOSTILE_TEXT.filter(lambda n: n.strip() != "default")},
    optional={
        "ids": st.one_of(st.none(), st.lists(UNKNOWN_ID, max_size=5)),
        "session_id": NAME,
        "confirm": st.booleans(),
    },
)
# Values a lax validator coerces into ids or confirm=true (they deleted turns 1 and 2 and wiped
# a namespace): aimed at the seeded namespace, they must be refused and delete nothing.
COERCIBLE_ID = st.sampled_from([True, False, "1", "2", 1.0, 2.5, "yes", None, [1], {"id": 1}])
COERCIBLE_CONFIRM = st.sampled_from(["yes", "on", "true", "1", 1, 0, 1.0, "[true]", [True]])
FORGET_COERCED = st.one_of(
    st.fixed_dictionaries({"ids": st.lists(COERCIBLE_ID, min_size=1, max_size=3)}),
    st.just({"ids": "[true]"}),  # a JSON string the SDK parses first
    st.fixed_dictionaries({"confirm": COERCIBLE_CONFIRM}),
    st.fixed_dictionaries({"ids": st.just([])}, optional={"confirm": st.booleans()}),
)


# Regex compile bombs (counted repeats that expand to gigabytes) among hostile patterns.
def _nested_repeats(atom: str, counts: list[int]) -> str:
    pattern = f"{atom}{{{counts[0]}}}"
    for count in counts[1:]:
        pattern = f"(?:{pattern}){{{count}}}"
    return pattern


BOMB = st.builds(
    _nested_repeats,
    st.sampled_from(["a", r"\d", "[ab]", "(?:ab|c)"]),
    st.lists(st.integers(min_value=1000, max_value=10**9), min_size=1, max_size=3),
)
GREP = st.fixed_dictionaries(
    {"pattern": st.one_of(HOSTILE_TEXT, BOMB)},
    optional={"regex": st.booleans(), "limit": st.integers(min_value=-5, max_value=600)},
)

# What an unexpected exception looks like to a client (a domain error adds ": <message>").
UNEXPECTED = ("Traceback", "sqlite3.", "OperationalError")


def _snapshot(db: Path) -> dict[int, tuple[Any, ...]]:
    with sqlite3.connect(db) as raw:
        rows = raw.execute(
            "SELECT id, namespace, session_id, position, speaker, role, text, timestamp, "
            "timestamp_raw, metadata, content_hash FROM turns"
        ).fetchall()
    return {row[0]: row for row in rows}


@pytest.fixture
def session(seeded: Path) -> Iterator[tuple[BlockingPortal, Client]]:
    """One MCP client session for a whole hypothesis run: it must survive every input."""
    with start_blocking_portal() as portal:
        client = Client(create_server(HOSTILE_CONFIG, seeded))
        with portal.wrap_async_context_manager(client):
            yield portal, client


def _sendable(value: Any) -> bool:
    """Lone surrogates cannot be encoded as JSON by an MCP client (the store's own tests
    cover them); every other generated value is sent."""
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=True).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    db = tmp_path / "hostile.db"

    async def seed() -> None:
        async with Client(create_server(HOSTILE_CONFIG, db)) as client:
            stored = await client.call_tool("remember", {"turns": SEED, "session_id": "seed"})
            assert not stored.is_error, stored.content

    anyio.run(seed)
    return db


def _fuzz_tool(
    db: Path, session: tuple[BlockingPortal, Client], tool: str, arguments: dict[str, Any]
) -> None:
    """Call `tool` with `arguments` in the shared session; check the answer and the store."""
    assume(_sendable(arguments))
    portal, client = session
    before = _snapshot(db)

    async def call() -> Any:
        with anyio.fail_after(120):
            result = await client.call_tool(tool, arguments)
            # The session survives whatever the call was.
            alive = await client.call_tool("recall", {"query": "puppy"})
            assert not alive.is_error and alive.structured_content["passages"]
            return result

    result = portal.call(call)
    after = _snapshot(db)
    if result.is_error:
        message = result.content[0].text
        assert message.startswith(f"Error executing tool {tool}: "), message[:300]
        assert not any(m in message for m in UNEXPECTED), f"{tool}: {message[:300]}"
        assert after == before
        return
    out = result.structured_content
    assert out is not None
    added: set[int] = set()
    if tool == "remember":
        added = set(out["ids"]) - set(before)
        assert set(after) - set(before) == added
    elif tool == "recall":
        # Passages fit the budget; warnings always get through, so a tiny budget with a
        # warning (a contentless query) may exceed it with no passage returned.
        assert out["tokens_used"] >= 0
        assert out["tokens_used"] <= out["max_tokens"] or not out["passages"]
        assert all(p["id"] in before for p in out["passages"])
    elif tool == "grep":
        assert all(m["id"] in before for m in out["matches"])
    else:
        assert out["deleted_turn_ids"] == []
    assert {i: after[i] for i in before} == before, "a stored turn changed"
    assert set(after) == set(before) | added


def _run(check: Callable[..., None], strategy: st.SearchStrategy[Any], examples: int) -> int:
    """Run `check` on `examples` generated inputs; return how many were tried (generated
    inputs an MCP client cannot send are rejected by `assume` and not counted)."""
    tried = 0

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(strategy)
    def property_(value: Any) -> None:
        nonlocal tried
        check(value)
        tried += 1

    property_()
    return tried


def test_hostile_remember_calls_store_verbatim_or_fail_clearly(seeded: Path, session) -> None:
    tried = _run(lambda args: _fuzz_tool(seeded, session, "remember", args), REMEMBER, 300)
    assert tried >= 300


def test_hostile_recall_calls_answer_or_fail_clearly_and_change_nothing(
    seeded: Path, session
) -> None:
    tried = _run(lambda args: _fuzz_tool(seeded, session, "recall", args), RECALL, 400)
    assert tried >= 400


def test_hostile_forget_calls_on_unknown_targets_delete_nothing(seeded: Path, session) -> None:
    tried = _run(lambda args: _fuzz_tool(seeded, session, "forget", args), FORGET, 200)
    assert tried >= 200


def test_forget_refuses_coercible_ids_and_confirm_and_deletes_nothing(
    seeded: Path, session
) -> None:
    def check(arguments: dict[str, Any]) -> None:
        portal, client = session
        before = _snapshot(seeded)
        result = portal.call(client.call_tool, "forget", arguments)
        assert result.is_error, arguments
        assert not any(m in result.content[0].text for m in UNEXPECTED)
        assert _snapshot(seeded) == before

    tried = _run(check, FORGET_COERCED, 60)
    assert tried >= 60


def test_hostile_grep_calls_and_regex_bombs_answer_or_fail_clearly(seeded: Path, session) -> None:
    tried = _run(lambda args: _fuzz_tool(seeded, session, "grep", args), GREP, 200)
    assert tried >= 200


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"turns": [{"text": f"turn {i}"} for i in range(10_000)]}, None),
        ({"turns": [{"text": f"turn {i}"} for i in range(10_001)]}, "10000"),
        ({"text": "x" * 1_000_000}, None),
        ({"text": "x" * 1_000_001}, "limit"),
        ({"turns": [{"text": f"{i} " + "x" * 999_990} for i in range(21)]}, "max_call_chars"),
    ],
    ids=["10000-turns", "10001-turns", "1MB-text", "over-1MB-text", "over-20M-chars-call"],
)
def test_the_largest_allowed_calls_work_and_larger_ones_name_the_limit(
    seeded: Path, arguments: dict[str, Any], error: str | None
) -> None:
    before = _snapshot(seeded)

    async def call() -> Any:
        async with Client(create_server(HOSTILE_CONFIG, seeded)) as client:
            return await client.call_tool("remember", arguments)

    result = anyio.run(call)
    if error is None:
        assert not result.is_error, result.content
        assert len(_snapshot(seeded)) == len(before) + len(result.structured_content["ids"])
    else:
        assert result.is_error and error in result.content[0].text
        assert _snapshot(seeded) == before


# ---------------------------------------------------------------------- the CLI


CLI_RECALL = st.tuples(
    st.one_of(HOSTILE_TEXT, st.just("")),
    st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63).map(str)),
    st.one_of(st.none(), TIMESTAMP.map(str)),
)


def test_cli_recall_with_hostile_queries_answers_or_exits_with_a_clear_error(
    seeded: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = seeded.parent / "lexical.toml"
    config.write_text('[nlp]\nspacy_models = []\n[retrieval]\ndense = false\nmode = "indexed"\n')
    monkeypatch.setenv("SMARTSEARCH_DB", str(seeded))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    before = _snapshot(seeded)

    def check(value: tuple[str, str | None, str | None]) -> None:
        query, budget, since = value
        if "\x00" in query or any(0xD800 <= ord(c) <= 0xDFFF for c in query):
            return  # argv cannot carry NUL or lone surrogates; the tools test those
        options = ["--json"]
        if budget is not None:
            options += ["--max-tokens", budget]
        if since is not None and "\x00" not in since:
            options += [f"--since={since}"]
        code = main(["recall", *options, "--", query])
        err = capsys.readouterr().err
        assert code in (0, 2), err  # 2: a usage error (a bad query, budget or date)
        if code == 2:
            assert err.startswith("error: ") and not any(m in err for m in UNEXPECTED), err
        assert _snapshot(seeded) == before

    assert _run(check, CLI_RECALL, 150) >= 150


BAD_FILE = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300),
    st.lists(
        st.one_of(
            st.just('{"text": "ok"}'),
            st.just("{}"),
            st.just('{"text": null}'),
            st.just('{"text": "x", "timestamp": "99999-01-01"}'),
            st.just('{"text": "x", "role": "root"}'),
            st.just('{"text": "\\ud800"}'),
            st.just('{"text": "x", "metadata": [1]}'),
            st.just("[1, 2"),
            st.just('{"mapping": {}}'),
            st.just('[{"uuid": 1, "chat_messages": "x"}]'),
            st.just('{"text": "x", "session_id": ""}'),
        ),
        max_size=6,
    ).map("\n".join),
)


def test_cli_import_of_bad_files_stores_nothing_or_imports_cleanly(
    seeded: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = tmp_path / "lexical.toml"
    config.write_text("[nlp]\nspacy_models = []\n[retrieval]\ndense = false\n")
    monkeypatch.setenv("SMARTSEARCH_DB", str(seeded))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    file = tmp_path / "bad"

    def check(value: tuple[bytes | str, str]) -> None:
        content, fmt = value
        if isinstance(content, bytes):
            file.write_bytes(content)
        else:
            file.write_text(content, encoding="utf-8", errors="surrogatepass")
        before = _snapshot(seeded)
        code = main(["import", str(file), "--format", fmt, "--no-progress"])
        err = capsys.readouterr().err
        after = _snapshot(seeded)
        assert code in (0, 1), err
        assert {i: after[i] for i in before} == before, "a stored turn changed"
        if code == 1:
            assert err.startswith("error: ") and not any(m in err for m in UNEXPECTED), err
            assert after == before, "a failed import stored turns"

    strategy = st.tuples(BAD_FILE, st.sampled_from(["jsonl", "chatgpt", "claude"]))
    assert _run(check, strategy, 150) >= 150
