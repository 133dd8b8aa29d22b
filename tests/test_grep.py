"""The grep tool: literal and regex matching over raw turns, bounded in time and output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from servers import REPO, run_cli, subprocess_env, write_lexical_config

from smartsearch_mcp import grep as grep_rules
from smartsearch_mcp.config import Config
from smartsearch_mcp.server import create_server
from smartsearch_mcp.types import InputError, Turn, TurnInput

pytestmark = pytest.mark.anyio

LEXICAL = Config().with_overrides(
    rank={"scorers": ["lexical"]}, nlp={"spacy_models": []}, retrieval={"dense": False}
)

TURNS = [
    {"text": "The build fails with ValueError: bad magic number", "role": "user",
     "timestamp": "2024-03-01T10:00:00"},
    {"text": "Try deleting the __pycache__ folder (a stale .pyc).", "role": "assistant",
     "timestamp": "2024-03-01T10:00:05"},
    {"text": "That fixed it. Also: valueerror again in tests?", "role": "user",
     "timestamp": "2024-03-02T09:00:00"},
]  # fmt: skip


def _turn(text: str, id: int = 1) -> Turn:
    return Turn(id, "ns", "s", 0, None, "user", text, "2024-01-01T00:00:00", None, "", {})


def _scan(pattern: str, texts: list[str], use_regex: bool = False, limit: int = 50):
    result = grep_rules.GrepResult(pattern=pattern, regex=use_regex)
    scan = grep_rules.GrepScan(grep_rules.compile_pattern(pattern, use_regex), result, limit)
    scan.scan([_turn(t, i) for i, t in enumerate(texts, 1)])
    return result


def test_literal_patterns_match_case_insensitively_and_treat_regex_syntax_as_text():
    result = _scan("a.c(", ["xa.c(y", "abc(", "A.C("])
    assert [hit.turn.id for hit in result.hits] == [1, 3]


def test_an_invalid_regex_is_an_error_that_suggests_literal_mode():
    with pytest.raises(InputError, match="regex=false"):
        grep_rules.compile_pattern("(unclosed", use_regex=True)


def test_a_catastrophically_backtracking_pattern_is_stopped_and_reported():
    result = grep_rules.GrepResult(pattern="(a|aa)+$", regex=True)
    scan = grep_rules.GrepScan(
        grep_rules.compile_pattern("(a|aa)+$", True), result, 10, per_turn_seconds=0.2
    )
    with pytest.raises(InputError, match="backtracks catastrophically"):
        scan.scan([_turn("a" * 80 + "b")])


def test_output_is_capped_in_turns_snippets_and_snippet_length():
    texts = ["needle " * 5000] * 5
    result = _scan("needle", texts, limit=2)
    assert len(result.hits) == 2 and result.truncated
    for hit in result.hits:
        assert hit.match_count == 1000  # counted up to the cap
        assert len(hit.snippets) == grep_rules.MAX_SNIPPETS
        assert all(len(s.text) <= grep_rules.SNIPPET_CHARS for s in hit.snippets)


def test_a_short_turn_is_one_unmarked_snippet_and_a_long_one_is_marked_where_cut():
    from smartsearch_mcp.output import format_grep, grep_output

    short = "the port moved to 6543, then back to port 5432"
    long = "x " * 300 + "port 6543 " + "y " * 300
    result = _scan("port", [short, long])
    first, _ = result.hits
    assert len(first.snippets) == 1 and first.match_count == 2  # one snippet shows both
    text = format_grep(grep_output(result))
    assert f"  {short}\n" in text + "\n"  # whole: no "…" around it
    assert next(line for line in text.splitlines() if "6543 y" in line).startswith("  …")
    assert text.rstrip().endswith("…")


@given(st.text(min_size=1, max_size=30), st.text(max_size=300))
@settings(max_examples=200, deadline=None)
def test_every_snippet_contains_its_match_and_lies_inside_the_turn(pattern: str, text: str):
    result = _scan(pattern, [text])
    if pattern.isascii() and text.isascii():
        assert bool(result.hits) == (pattern.lower() in text.lower())
    for hit in result.hits:
        for snippet in hit.snippets:
            assert text[snippet.start : snippet.start + len(snippet.text)] == snippet.text
            assert snippet.start <= snippet.match_start < snippet.match_end
            assert len(snippet.text) <= grep_rules.SNIPPET_CHARS


@pytest.fixture
def server(tmp_path: Path):
    return create_server(LEXICAL, tmp_path / "memory.db", namespace="proj")


async def test_grep_through_the_client_finds_exact_text_newest_first(server):
    with anyio.fail_after(30):
        async with Client(server) as client:
            await client.call_tool("remember", {"turns": TURNS, "session_id": "s1"})
            found = await client.call_tool("grep", {"pattern": "ValueError"})
    assert not found.is_error
    matches = found.structured_content["matches"]
    assert [m["timestamp"] for m in matches] == ["2024-03-02T09:00:00Z", "2024-03-01T10:00:00Z"]
    assert all(m["namespace"] == "proj" for m in matches)
    assert "valueerror again" in found.content[0].text


async def test_grep_with_regex_and_hostile_patterns_through_the_client(server):
    with anyio.fail_after(60):
        async with Client(server) as client:
            await client.call_tool("remember", {"turns": TURNS, "session_id": "s1"})
            await client.call_tool("remember", {"text": "a" * 5000 + "!", "session_id": "s2"})
            regex_hit = await client.call_tool("grep", {"pattern": r"\.pyc\b", "regex": True})
            bad = await client.call_tool("grep", {"pattern": "([a-z]", "regex": True})
            slow = await client.call_tool("grep", {"pattern": "(a|aa)+$", "regex": True})
            literal = await client.call_tool("grep", {"pattern": "(a|aa)+$"})
            empty = await client.call_tool("grep", {"pattern": ""})
            huge_limit = await client.call_tool("grep", {"pattern": "a", "limit": 10**9})
    assert [m["id"] for m in regex_hit.structured_content["matches"]] == [2]
    assert bad.is_error and "invalid regular expression" in bad.content[0].text
    assert slow.is_error and "catastrophically" in slow.content[0].text
    assert not literal.is_error and literal.structured_content["matches"] == []
    assert empty.is_error and huge_limit.is_error


async def test_grep_sees_only_its_namespace_unless_global_is_included(tmp_path: Path):
    config = LEXICAL.with_overrides(scope={"include_global": True})
    server = create_server(config, tmp_path / "m.db", namespace="proj")
    with anyio.fail_after(30):
        async with Client(server) as client:
            await client.call_tool("remember", {"text": "shared fact: tabs", "namespace": "global"})
            await client.call_tool("remember", {"text": "other fact: tabs", "namespace": "other"})
            await client.call_tool("remember", {"text": "project fact: tabs"})
            found = await client.call_tool("grep", {"pattern": "tabs"})
    assert {m["namespace"] for m in found.structured_content["matches"]} == {"proj", "global"}


# Texts mixing ASCII with the characters whose case folding reaches ASCII letters (İ, the
# Kelvin sign, long s) and other non-ASCII ones.
_FOLD_TEXT = st.text(alphabet=st.sampled_from("aiksIKS İ\u212aſé.É-"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(pattern=_FOLD_TEXT.filter(lambda p: p.strip()), text=_FOLD_TEXT)
@example(pattern="kelvin", text="\u212aELVIN")
@example(pattern="Is", text="\u0130\u017f")
@example(pattern="é", text="É")
def test_the_sql_prefilter_never_skips_a_turn_the_literal_match_finds(pattern: str, text: str):
    import sqlite3

    from smartsearch_mcp.store.queries import contains_ignoring_case

    needle = grep_rules.literal_prefilter(pattern, use_regex=False)
    matched = bool(_scan(pattern, [text]).hits)
    if needle is None:
        assert not pattern.isascii()
        return
    db = sqlite3.connect(":memory:")
    passes = db.execute(f"SELECT {contains_ignoring_case('?')}", (text, needle)).fetchone()[0]
    assert passes or not matched


async def test_a_literal_grep_over_many_turns_reads_only_those_that_can_match(tmp_path: Path):
    from smartsearch_mcp.memory import Memory

    memory = await Memory.open(LEXICAL, tmp_path / "m.db", "proj")
    try:
        await memory.remember([TurnInput(f"routine note {i}") for i in range(1200)], "s1")
        await memory.remember([TurnInput("the \u212aelvin sign spells KELVIN")], "s2")
        found = await memory.grep("kelvin")
        none = await memory.grep("no such words")
        by_regex = await memory.grep("kel+vin", regex=True)
    finally:
        await memory.close()
    assert [h.turn.session_id for h in found.hits] == ["s2"]
    assert found.hits[0].match_count == 2
    assert found.turns_scanned == none.turns_scanned == by_regex.turns_scanned == 1201
    assert not none.hits and [h.turn.session_id for h in by_regex.hits] == ["s2"]


# A child process with at most this much address space: a regex compile bomb hits the limit
# (MemoryError or the kernel) long before the 22 GB it would take unbounded.
MEMORY_LIMIT = 800 * 2**20
LIMITED = (
    "import resource, runpy, sys; "
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_LIMIT}, {MEMORY_LIMIT})); "
    "sys.argv[0] = 'smartsearch-mcp'; runpy.run_module('smartsearch_mcp', run_name='__main__')"
)
BOMBS = ["a{100000000}", "(?:a{10000}){10000}", "((x{1000}){1000}){1000}", "[ab]{0,9999999}"]


@pytest.mark.parametrize("bomb", BOMBS)
def test_a_regex_compile_bomb_is_refused_quickly_by_the_cli_under_a_memory_limit(
    tmp_path: Path, bomb: str
):
    config = write_lexical_config(tmp_path)
    db = str(tmp_path / "m.db")
    stored = run_cli(["remember", "--db", db, "--config", str(config), "call 555-1234"])
    assert stored.returncode == 0, stored.stderr
    argv = ["grep", "--regex", "--db", db, "--config", str(config), bomb]
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, *argv],
        capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=str(REPO),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr  # a bad --regex value: a usage error
    assert "repeats too much" in done.stderr and "leave out --regex" in done.stderr
    assert "Traceback" not in done.stderr
    legit = subprocess.run(
        [sys.executable, "-c", LIMITED, *argv[:-1], r"\d{3}-\d{4}"],
        capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=str(REPO),
    )  # fmt: skip
    assert legit.returncode == 0 and "555-1234" in legit.stdout, legit.stderr


async def test_a_regex_compile_bomb_is_a_tool_error_and_the_server_lives_on(tmp_path: Path):
    """A stdio server under a memory limit: the bomb is refused with a message that says why,
    and the same session then answers legitimate counted repeats."""
    config = write_lexical_config(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", LIMITED, "serve", "--db", str(tmp_path / "m.db"), "--config", str(config),
              "--no-preload"],
        env=subprocess_env(), cwd=str(REPO),
    )  # fmt: skip
    with anyio.fail_after(120):
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            await session.call_tool("remember", {"text": "call 555-1234 or ababab"})
            refused = [
                await session.call_tool("grep", {"pattern": bomb, "regex": True}) for bomb in BOMBS
            ]
            phone = await session.call_tool("grep", {"pattern": r"\d{3}-\d{4}", "regex": True})
            pairs = await session.call_tool("grep", {"pattern": "(ab){2,5}", "regex": True})
    for result in refused:
        assert result.is_error
        assert "repeats too much" in result.content[0].text  # type: ignore[union-attr]
    assert not phone.is_error and phone.structured_content["matches"]
    assert not pairs.is_error and pairs.structured_content["matches"]


@pytest.mark.parametrize(
    ("pattern", "cost"),
    [
        (r"\d{3}-\d{4}", 8),
        ("(ab){2,5}", 10),
        ("(?:a{1000}){1000}", 1_001_000),  # ?: counts as one atom: an upper bound
        ("((a{10}){10}){10}", 1000),
        ("(a|b){50000}", 100_000),  # alternatives add up
        ("a{,100000}", 100_000),
        ("a{ 100000 }", 100_000),  # read as a repeat even where the engine would not
        ("[a{100000}]", 1),  # inside a class braces are text
        (r"[\]a{1000}]", 1),
        ("[]a{1000}]", 1),
        (r"\p{L}{10}", 10),
        ("(?#[)a{100000}(?#])", 100_000),  # a comment does not open a class
        ("(?V1)(a{1000}[[x]) ]){1000}", 27 * 1000 * 1000),  # nested classes: no parse
    ],
)
def test_repeat_cost_multiplies_nested_counted_repeats(pattern: str, cost: int):
    assert grep_rules.repeat_cost(pattern) == cost


def test_verbose_mode_is_refused_since_its_spaces_and_comments_hide_repeats():
    with pytest.raises(InputError, match="verbose mode"):
        grep_rules.compile_pattern("(?x)a{1 # a comment\n00000000}", use_regex=True)


def test_a_memory_error_while_compiling_is_an_error_that_says_what_to_do(monkeypatch):
    import regex

    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError

    monkeypatch.setattr(regex, "compile", out_of_memory)
    with pytest.raises(InputError, match=r"more memory to compile.*regex=false"):
        grep_rules.compile_pattern(r"\d{3}-\d{4}", use_regex=True)
