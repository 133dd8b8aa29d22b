"""`remember`, `forget`, `grep`, `timeline` and `stats` through the command line
(smartsearch_mcp/cli/memory_admin.py)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from smartsearch_mcp.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_stats_reports_turns_per_namespace(env, capsys):
    main(
        ["import", str(FIXTURES / "exports" / "turns.jsonl"), "--format", "jsonl", "--no-progress"]
    )
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["turns"] == sum(stats["namespaces"].values()) > 0


def test_remember_stores_a_note_that_recall_then_finds(env, capsys, monkeypatch):
    args = ["--namespace", "work"]
    assert main(["remember", "The reporting database is MariaDB 11.", *args]) == 0
    assert "Remembered as turn 1 in namespace 'work'" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("Standup moved to 9:30.\n"))
    assert main(["remember", "--speaker", "Ana", "--session-id", "s1", "--json", *args]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["stored"] == 1 and stored["session_id"] == "s1"
    monkeypatch.setattr("sys.stdin", io.StringIO("Standup moved to 9:30.\n"))
    assert main(["remember", "-", "--speaker", "Ana", "--session-id", "s1", *args]) == 0
    assert "Already stored as turn 2" in capsys.readouterr().out
    assert main(["recall", "which database does reporting use?", "--json", *args]) == 0
    passages = json.loads(capsys.readouterr().out)["passages"]
    assert passages[0]["text"] == "The reporting database is MariaDB 11."
    assert main(["timeline", "--json", *args]) == 0
    turns = json.loads(capsys.readouterr().out)["turns"]
    assert [(t["speaker"], t["text"]) for t in turns][-1] == ("Ana", "Standup moved to 9:30.")
    assert len(turns) == 2


def test_remember_refuses_an_empty_note_and_stores_nothing(env, capsys, monkeypatch):
    assert main(["remember", "  "]) == 2
    assert "empty" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["remember"]) == 2
    assert main(["stats", "--json"]) == 1
    assert "no database at" in capsys.readouterr().err
    assert not (env / "memory.db").exists()


def test_forget_deletes_by_id_and_the_whole_namespace_only_when_confirmed(env, capsys):
    args = ["--namespace", "work"]
    for note in ("first note", "second note", "third note"):
        assert main(["remember", note, *args]) == 0
    capsys.readouterr()
    assert main(["forget", *args]) == 2
    assert "--id" in capsys.readouterr().err
    assert main(["forget", "--all", "--id", "1", *args]) == 2
    assert main(["forget", "--id", "1", "--id", "99", *args]) == 1  # all or nothing
    assert main(["forget", "--all", *args]) == 2
    assert "all 3 turns of namespace 'work'" in capsys.readouterr().err
    assert main(["forget", "--id", "1", "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out)["deleted_turn_ids"] == [1]
    assert main(["forget", "--all", "--yes", *args]) == 0
    assert "Deleted 2 turn(s)" in capsys.readouterr().out
    assert main(["stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["turns"] == 0


def test_empty_grep_timeline_export_and_stats_say_where_the_turns_are(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    assert main(["remember", "Stored elsewhere.", "--namespace", "work"]) == 0
    capsys.readouterr()
    assert main(["grep", "Stored"]) == 0
    assert "'work' (1 turn)" in capsys.readouterr().out
    assert main(["timeline"]) == 0
    assert "'work' (1 turn)" in capsys.readouterr().out
    assert main(["timeline", "--json"]) == 0
    assert "'work' (1 turn)" in json.loads(capsys.readouterr().out)["warnings"][0]
    assert main(["export", "-o", str(env / "out.jsonl")]) == 0
    err = capsys.readouterr().err
    assert "exported 0 turns from namespace 'default'" in err and "'work' (1 turn)" in err
    assert main(["stats"]) == 0
    out = capsys.readouterr().out
    assert "namespace 'default'" in out and "'work' (1 turn)" in out


def test_counts_are_singular_for_one(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    source = env / "one.jsonl"
    source.write_text('{"text": "the only vault note", "session_id": "s"}\n')
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "imported 1 turn in 1 session (0 duplicates skipped)" in capsys.readouterr().err
    assert main(["grep", "vault"]) == 0
    out = capsys.readouterr().out
    assert "1 turn contains 'vault'" in out and "1 match)" in out
