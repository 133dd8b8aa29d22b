"""Storing an import: the whole plan is checked before anything is stored, errors name the
session and the turn's place in it, and storing counts what went where
(smartsearch_mcp/importing.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from servers import LEXICAL_TOML

from smartsearch_mcp.config import Config
from smartsearch_mcp.importers import ImportedSession
from smartsearch_mcp.importing import ImportTotals, plan_import, renumbered, store_import
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.types import InputError, SessionInput, TurnInput


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(LEXICAL_TOML + "[store]\nmax_text_chars = 10\nmax_turns_per_call = 2\n")
    return path


async def _memory(config_file: Path) -> Memory:
    return await Memory.open(Config.load(str(config_file)), config_file.parent / "m.db", "here")


def _session(session_id: str | None, *texts: str, namespace: str | None = None) -> ImportedSession:
    return ImportedSession(namespace, SessionInput(session_id, [TurnInput(t) for t in texts]))


def test_a_bad_turn_names_its_session_and_its_place_in_the_session_not_in_its_call(
    config_file: Path,
):
    async def run() -> str:
        memory = await _memory(config_file)
        try:
            sessions = [_session("s1", "ok"), _session("s2", "a", "b", "c", "x" * 20, "d")]
            with pytest.raises(InputError) as caught:
                plan_import(memory, sessions, None, None)
            assert await memory.store.namespaces() == {}
            return str(caught.value)
        finally:
            await memory.close()

    message = anyio.run(run)
    # four turns of the second session: the bad one is the second of the second call
    assert message.startswith("session 2 ('s2'): turn 4")
    assert message.endswith("; nothing was imported")


def test_the_plan_skips_empty_sessions_and_an_explicit_namespace_wins(config_file: Path):
    async def run() -> list[tuple[str, str | None, list[int]]]:
        memory = await _memory(config_file)
        try:
            sessions = [
                _session("a", "one", "two", "three", namespace="from-file"),
                _session("empty"),
                _session(None, "four", namespace=None),
            ]
            explicit = plan_import(memory, sessions, "given", "fallback")
            assert {p.namespace for p in explicit} == {"given"}
            plan = plan_import(memory, sessions, None, "fallback")
            return [(p.namespace, p.session_id, [len(b) for b in p.batches]) for p in plan]
        finally:
            await memory.close()

    assert anyio.run(run) == [("from-file", "a", [2, 1]), ("fallback", None, [1])]


def test_storing_a_plan_twice_counts_the_second_as_duplicates(config_file: Path):
    async def run() -> tuple[ImportTotals, ImportTotals, list[int]]:
        memory = await _memory(config_file)
        try:
            sessions = [
                _session("a", "one", "two", "three", namespace="x"),
                _session("b", "four", namespace="y"),
            ]
            told: list[int] = []
            first = await store_import(
                memory, plan_import(memory, sessions, None, None), told.append
            )
            again = await store_import(memory, plan_import(memory, sessions, None, None))
            return first, again, told
        finally:
            await memory.close()

    first, again, told = anyio.run(run)
    assert (first.stored, first.skipped, first.sessions, first.filled) == (
        4,
        0,
        2,
        {"x": 3, "y": 1},
    )
    assert (again.stored, again.skipped, again.sessions) == (0, 4, 2)
    assert told == [2, 1, 1]


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.text(max_size=30))
def test_renumbering_reads_a_calls_index_as_the_turns_place_in_its_session(
    index: int, offset: int, rest: str
):
    assert str(renumbered(InputError(f"turns[{index}]{rest}"), offset)) == (
        f"turn {index + offset + 1}{rest}"
    )


def test_renumbering_leaves_other_messages_alone():
    assert str(renumbered(InputError("session_id is too long"), 5)) == "session_id is too long"
