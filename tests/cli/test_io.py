"""`import` and `export` through the command line: round trips, duplicates, namespaces,
private export files (smartsearch_mcp/cli/io.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from smartsearch_mcp.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _exported(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


_KEPT = (
    "namespace",
    "session_id",
    "position",
    "speaker",
    "role",
    "text",
    "timestamp",
    "timestamp_raw",
    "metadata",
)


def _namespaces(capsys) -> dict[str, int]:
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["namespaces"]


def test_export_round_trips_through_import(env, capsys):
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert main(["export", "--all", "-o", str(env / "first.jsonl")]) == 0
    first = _exported(env / "first.jsonl")
    assert {t["text"] for t in first} == {
        json.loads(line)["text"] for line in source.read_text().splitlines() if line.strip()
    }
    other_db = env / "second.db"
    assert (
        main(
            [
                "import",
                str(env / "first.jsonl"),
                "--format",
                "jsonl",
                "--db",
                str(other_db),
                "--no-progress",
            ]
        )
        == 0
    )
    assert main(["export", "--all", "--db", str(other_db), "-o", str(env / "second.jsonl")]) == 0
    second = _exported(env / "second.jsonl")
    # A turn remembered without a timestamp was stamped when stored; after a round trip its
    # stamp is still marked as generated (no original string).
    assert [{k: t[k] for k in _KEPT} for t in second] == [{k: t[k] for k in _KEPT} for t in first]


def test_importing_the_same_file_twice_skips_duplicates(env, capsys):
    source = FIXTURES / "exports" / "chatgpt_conversations.json"
    assert main(["import", str(source), "--format", "chatgpt", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["import", str(source), "--format", "chatgpt", "--no-progress"]) == 0
    assert "imported 0 turns" in capsys.readouterr().err


def test_an_import_says_how_many_turns_it_dated_now(env, capsys, tmp_path):
    records = [
        {"text": "We fly to Lisbon on 3 June.", "timestamp": "2024-05-01T10:00:00Z"},
        {"text": "And back on the 9th."},
    ]
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "1 turn without a timestamp dated now" in capsys.readouterr().err


def test_an_explicit_namespace_wins_over_the_one_an_import_file_names(env, capsys):
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert main(["stats", "--json"]) == 0
    from_file = set(json.loads(capsys.readouterr().out)["namespaces"])
    assert "archive" not in from_file
    other = ["--db", str(env / "other.db")]
    args = ["import", str(source), "--format", "jsonl", "--no-progress", "--namespace", "archive"]
    assert main([*args, *other]) == 0
    assert "namespace 'archive'" in capsys.readouterr().err  # the import says where it went
    assert main(["stats", "--json", *other]) == 0
    assert set(json.loads(capsys.readouterr().out)["namespaces"]) == {"archive"}


def test_a_bad_import_file_is_a_clear_error_and_stores_nothing(env, capsys):
    bad = env / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": 5}\n')
    assert main(["import", str(bad), "--format", "jsonl", "--no-progress"]) == 1
    assert "line 2" in capsys.readouterr().err
    main(["stats", "--json"])
    assert json.loads(capsys.readouterr().out)["turns"] == 0


def test_export_then_import_into_the_same_database_stores_nothing_new(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    assert main(["remember", "No timestamp given here."]) == 0
    assert main(["remember", "With a timestamp.", "--timestamp", "2024-03-15T09:30:00"]) == 0
    source = env / "loose.jsonl"
    source.write_text('{"text": "A line without a session."}\n')
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    before = _namespaces(capsys)
    assert main(["export", "--all", "-o", str(env / "all.jsonl")]) == 0
    capsys.readouterr()
    assert main(["import", str(env / "all.jsonl"), "--format", "jsonl", "--no-progress"]) == 0
    assert "imported 0 turns in 3 sessions (3 duplicates skipped)" in capsys.readouterr().err
    assert _namespaces(capsys) == before


def test_importing_the_same_jsonl_twice_stores_nothing_new(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    source = env / "loose.jsonl"
    source.write_text('{"text": "first line"}\n{"text": "second line"}\n')
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "imported 2 turns in 1 session (0 duplicates skipped)" in capsys.readouterr().err
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "imported 0 turns in 1 session (2 duplicates skipped)" in capsys.readouterr().err
    assert _namespaces(capsys) == {"default": 2}


def test_export_files_are_readable_by_their_owner_only(env, capsys, caplog, monkeypatch):
    import os

    monkeypatch.chdir(env)
    assert main(["remember", "A private note."]) == 0
    old = os.umask(0o022)
    try:
        target = env / "export.jsonl"
        caplog.clear()
        assert main(["export", "-o", str(target)]) == 0
        assert target.stat().st_mode & 0o777 == 0o600
        # The snapshot export reads from is private from its first byte: nothing to warn about.
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        target.chmod(0o644)  # an earlier export, world-readable: replaced by a private one
        assert main(["export", "-o", str(target)]) == 0
        assert target.stat().st_mode & 0o777 == 0o600
        assert len(_exported(target)) == 1
    finally:
        os.umask(old)
    assert [p.name for p in env.iterdir() if p.name.startswith(".export")] == []


def test_import_without_format_tells_it_from_the_file_and_says_so(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    assert (
        main(["import", str(FIXTURES / "exports" / "claude_conversations.json"), "--no-progress"])
        == 0
    )
    err = capsys.readouterr().err
    assert "as claude (told from its contents; --format to choose)" in err
    assert "imported 0 turns" not in err
    unknown = env / "notes.txt"
    unknown.write_text("just some notes\n")
    assert main(["import", str(unknown), "--no-progress"]) == 1
    assert "pass --format" in capsys.readouterr().err
