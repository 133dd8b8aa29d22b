"""The SQL of the reads both backends share (smartsearch_mcp/store/queries.py), string for
string: the same statement for both but for what each dialect needs."""

from __future__ import annotations

from smartsearch_mcp.store import queries as sql
from smartsearch_mcp.store.queries import POSTGRES, SQLITE, TURN_COLUMNS
from smartsearch_mcp.types import Scope, Turn


def _turn(turn_id: int, timestamp: str | None) -> Turn:
    return Turn(turn_id, "ns", "s", 0, None, "user", "x", timestamp, None, "c", {})


def test_ids_are_an_in_list_of_placeholders_in_sqlite_and_one_array_in_postgres():
    assert SQLITE.among("id", [3, 1]) == ("id IN (?, ?)", [3, 1])
    assert POSTGRES.among("id", [3, 1]) == ("id = ANY(%s)", [[3, 1]])
    assert sql.turns_by_id(POSTGRES, [7], ["a", "b"]) == (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE id = ANY(%s) AND namespace = ANY(%s)",
        [[7], ["a", "b"]],
    )


def test_sqlite_reads_ids_in_chunks_within_its_parameter_limit_postgres_at_once():
    ids = list(range(1201))
    assert [len(c) for c in SQLITE.chunked(ids)] == [500, 500, 201]
    assert [len(c) for c in POSTGRES.chunked(ids)] == [1201]
    assert SQLITE.chunked([]) == [] and POSTGRES.chunked([]) == []


def test_the_timeline_sorts_missing_timestamps_first_on_both_backends():
    scope = Scope(("ns",), session_id="s")
    text, params = sql.timeline(SQLITE, scope, 5, latest=False)
    assert text == (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE namespace IN (?) AND session_id = ? "
        "ORDER BY timestamp ASC, session_id ASC, position ASC, id ASC LIMIT ?"
    )
    assert params == ["ns", "s", 5]
    text, params = sql.timeline(POSTGRES, scope, 5, latest=True)
    assert text == (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE namespace IN (%s) AND session_id = %s "
        "ORDER BY timestamp DESC NULLS LAST, session_id DESC, position DESC, id DESC LIMIT %s"
    )


def test_sqlite_id_scans_follow_the_rowid_and_postgres_chooses_its_index():
    scope = Scope(("ns",))
    assert sql.scope_lengths_from(SQLITE, scope, 40, 8) == (
        "SELECT length(text) FROM turns NOT INDEXED WHERE namespace IN (?) AND id >= ? "
        "ORDER BY id LIMIT 8",
        ["ns", 40],
    )
    assert sql.scope_lengths_from(POSTGRES, scope, 40, 8)[0].startswith(
        "SELECT length(text) FROM turns WHERE namespace IN (%s) AND id >= %s"
    )


def test_substring_prefilters_use_instr_in_sqlite_and_an_indexable_like_in_postgres():
    (where, params), _ = sql.scope_recent_scan(SQLITE, Scope(("ns",)), "50%_off")
    assert where.endswith(f"AND instr({sql.folded('text')}, ?) > 0")
    assert params == ["ns", "50%_off"]
    (where, params), _ = sql.scope_recent_scan(POSTGRES, Scope(("ns",)), "50%_off")
    assert where.endswith(f"AND {sql.folded('text')} LIKE %s")
    assert params == ["ns", "%50\\%\\_off%"]


def test_a_keyset_page_starts_after_the_last_turn_of_the_page_before():
    filtered, (dated, undated) = sql.scope_recent_scan(POSTGRES, Scope(("ns",)), None)
    first = sql.keyset_page("turns", filtered, dated, None, 100)
    assert first == (
        f"SELECT {TURN_COLUMNS} FROM turns WHERE namespace IN (%s) AND timestamp IS NOT NULL "
        "ORDER BY timestamp DESC, id DESC LIMIT 100",
        ["ns"],
    )
    after = sql.keyset_page("turns", filtered, dated, _turn(9, "2024-01-01T00:00:00Z"), 100)
    assert after[0].endswith(
        "AND timestamp IS NOT NULL AND (timestamp, id) < (%s, %s) ORDER BY timestamp DESC, "
        "id DESC LIMIT 100"
    )
    assert after[1] == ["ns", "2024-01-01T00:00:00Z", 9]
    assert sql.keyset_page("turns", filtered, undated, _turn(4, None), 10)[1] == ["ns", 4]


def test_transfer_reads_page_by_key():
    assert sql.table_rows(SQLITE, "embeddings", ("m", 3, 0), 50) == (
        "SELECT model, turn_id, start, vector FROM embeddings WHERE (model, turn_id, start) > "
        "(?, ?, ?) ORDER BY model, turn_id, start LIMIT 50",
        ["m", 3, 0],
    )
    assert sql.table_rows(POSTGRES, "sessions", None, 5)[1] == []
