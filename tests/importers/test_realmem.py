"""RealMem personas: sessions, queries where they occur, and the two-hop gold (memory used ->
memory point -> its source turn), on hand-written personas in RealMem's format."""

from pathlib import Path

import pytest

from smartsearch_mcp.importers.realmem import load_realmem, resolve_source_turn
from smartsearch_mcp.types import InputError

FOLDER = Path(__file__).parents[1] / "fixtures" / "realmem"
TURNS = [
    {"speaker": "User", "content": "Can you help me plan a garden?"},
    {"speaker": "Assistant", "content": "Sure, what grows well where you live?"},
    {"speaker": "User", "content": "I live by the sea, the wind is strong."},
    {"speaker": "Assistant", "content": "Then pick low shrubs that bend in the wind."},
]


def point(snapshot: str, source_turn: int, role: str = "User") -> dict[str, object]:
    return {
        "source_content_snapshot": snapshot,
        "source_turn": source_turn,
        "source_role_snapshot": role,
    }


def test_personas_load_in_name_order_with_their_sessions_in_file_order() -> None:
    ana, bo = load_realmem(FOLDER)

    assert (ana.name, bo.name) == ("Ana_Example", "Bo_Example")
    assert [s.session_id for s in ana.sessions] == [
        "Ana_Example:aaaa0001",
        "Ana_Example:aaaa0002",
        "Ana_Example:aaaa0003",
    ]
    first = ana.sessions[0].turns[0]
    assert (first.speaker, first.role, first.timestamp) == ("User", "user", "2025-03-01")
    assert first.metadata == {"session_uuid": "aaaa0001", "turn": 0}


def test_empty_turns_are_not_stored_but_keep_their_index_in_the_turn_keys() -> None:
    ana, _ = load_realmem(FOLDER)
    third = ana.sessions[2]

    assert len(third.turns) == 7  # 8 dialogue turns, one empty
    assert [t.metadata["turn"] for t in third.turns[:3]] == [0, 2, 3]
    assert ana.counts["empty turns"] == 1


def test_a_query_is_asked_before_its_own_turn_among_the_kept_turns() -> None:
    ana, bo = load_realmem(FOLDER)

    assert [(q.query_id, q.session_index, q.position) for q in ana.queries] == [
        ("Q-0001", 2, 1),  # the empty reply before it is not counted
        ("Q-0002", 2, 3),  # is_query given as a JSON boolean
        ("Q-0003", 2, 5),
    ]
    assert ana.queries[0].text.startswith("So with my oven")
    assert ana.queries[0].reference == "2025-03-02"  # the weekday dropped
    assert [q.category for q in ana.queries] == [
        "Dynamic Incremental",
        "Implicit Preference",
        "Temporal-reasoning",
    ]
    assert (bo.queries[0].session_index, bo.queries[0].position) == (1, 0)


def test_gold_is_the_source_turns_of_the_memories_the_reply_used() -> None:
    ana, bo = load_realmem(FOLDER)
    first, second, third = ana.queries

    # by a whitespace-folded equal snapshot, and by source_turn read 0-based (the role says)
    assert first.gold == ["aaaa0001#0", "aaaa0001#2"]
    # by a contained snapshot, and a turn of the query's own session before it
    assert second.gold == ["aaaa0001#1", "aaaa0003#0"]
    assert third.gold == []
    assert bo.queries[0].gold == ["bbbb0001#0"]


def test_unresolvable_references_are_kept_apart_and_a_reference_to_the_query_is_dropped() -> None:
    ana, _ = load_realmem(FOLDER)
    first, _, third = ana.queries

    assert len(first.unresolved) == 2  # an empty snapshot with source_turn -1; no such memory
    assert "A memory that no session holds." in first.unresolved[1]
    assert len(third.unresolved) == 1
    counts = ana.counts
    assert counts["memory references"] == 8
    assert counts["memory references resolved"] == 5
    assert counts["memory references unresolved"] == 3
    assert counts["memory references to the query turn or later (dropped)"] == 1
    assert counts["queries without gold"] == 1


def test_memory_points_count_how_they_resolved() -> None:
    ana, _ = load_realmem(FOLDER)

    assert {k: v for k, v in ana.counts.items() if k.startswith("memory points")} == {
        "memory points equal": 3,
        "memory points contained": 1,
        "memory points similar": 1,
        "memory points source_turn": 1,
        "memory points unresolved": 1,
    }


def test_the_snapshot_decides_over_source_turn() -> None:
    # source_turn 1 would be turn 0 (1-based) or 1 (0-based); the text is turn 2's
    assert resolve_source_turn(point("I live by the sea,  the wind is STRONG.", 1), TURNS) == (
        2,
        "equal",
    )
    assert resolve_source_turn(point("the wind is strong", 0), TURNS) == (2, "contained")
    assert resolve_source_turn(
        point("Then pick low shrubs which bend in wind!", 0, "Assistant"), TURNS
    ) == (3, "similar")


def test_source_turn_is_read_1_based_or_0_based_by_the_speaker_it_names() -> None:
    unlike = "Something nobody in this chat said at all, really."
    assert resolve_source_turn(point(unlike, 3, "User"), TURNS) == (2, "source_turn")  # 1-based
    assert resolve_source_turn(point(unlike, 3, "Assistant"), TURNS) == (3, "source_turn")
    assert resolve_source_turn(point("", 2, "User"), TURNS) == (2, "source_turn")
    assert resolve_source_turn(point("", -1), TURNS) == (None, "unresolved")
    assert resolve_source_turn(point(unlike, 9), TURNS) == (None, "unresolved")


def test_a_snapshot_similar_to_two_turns_is_not_a_clear_match() -> None:
    turns = [
        {"speaker": "User", "content": "I like green tea in the morning."},
        {"speaker": "User", "content": "I like green tea in the evening."},
    ]

    assert resolve_source_turn(point("I like green tea in the noon.", -1), turns) == (
        None,
        "unresolved",
    )


def test_a_file_that_is_not_realmem_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"sessions": []}')

    with pytest.raises(InputError, match="RealMem"):
        load_realmem(tmp_path / "x.json")
