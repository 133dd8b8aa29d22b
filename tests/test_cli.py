"""The command line through its entry point: import, export round trip, recall, stats,
doctor, config errors, remember and forget."""

from __future__ import annotations

import io
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from servers import LEXICAL_TOML

from smartsearch_mcp.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "lexical.toml"
    config.write_text(LEXICAL_TOML)
    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    monkeypatch.delenv("SMARTSEARCH_NAMESPACE", raising=False)
    return tmp_path


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


def test_recall_prints_sessions_with_dates_and_json_on_request(env, capsys):
    main(
        [
            "import",
            str(FIXTURES / "exports" / "turns.jsonl"),
            "--format",
            "jsonl",
            "--no-progress",
        ]
    )
    capsys.readouterr()
    assert main(["recall", "When does the release move?", "--namespace", "work"]) == 0
    text = capsys.readouterr().out
    assert "Friday" in text and "2024-03-15" in text
    head = re.match(r"(\d+) (passages?) from (\d+) (sessions?) \(", text)
    assert head, text
    for count, noun in ((head[1], head[2]), (head[3], head[4])):
        assert noun.endswith("s") == (count != "1"), head[0]
    assert main(["recall", "release Friday", "--namespace", "work", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["passages"][0]["text"] == "The release moves to Friday."
    assert data["rankers"] == ["lexical"]


def test_stats_reports_turns_per_namespace(env, capsys):
    main(
        ["import", str(FIXTURES / "exports" / "turns.jsonl"), "--format", "jsonl", "--no-progress"]
    )
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["turns"] == sum(stats["namespaces"].values()) > 0


def test_doctor_checks_the_database_and_prints_client_config_with_absolute_paths(env, capsys):
    assert main(["remember", "a note", "--namespace", "default"]) == 0
    assert main(["doctor", "--skip-models"]) == 0
    out = capsys.readouterr().out
    assert "integrity check passed" in out
    assert '"mcpServers"' in out and str(env / "memory.db") in out
    assert "claude mcp add smartsearch" in out


@pytest.mark.parametrize(
    "url", ["postgresql://u:Hun#ter2@127.0.0.1:1/db", "postgresql://u:Hunter2@[::1/db"]
)
def test_a_database_password_is_never_printed(env, capsys, url):
    pytest.importorskip("psycopg")
    assert main(["stats", "--db", url]) != 0
    assert main(["doctor", "--skip-models", "--db", url]) != 0
    printed = capsys.readouterr()
    assert "ter2" not in printed.out + printed.err
    assert "u:***@" in printed.out and "postgresql://u:***@" in printed.err
    assert "PGPASSWORD" in printed.out  # the snippets say how to put the password back


def test_an_unknown_config_key_fails_at_start_naming_the_key(env, capsys):
    bad = env / "bad.toml"
    bad.write_text("[truncation]\nmax_tokenz = 10\n")
    assert main(["--config", str(bad), "stats"]) == 1
    assert "truncation.max_tokenz" in capsys.readouterr().err


def test_a_bad_import_file_is_a_clear_error_and_stores_nothing(env, capsys):
    bad = env / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"text": 5}\n')
    assert main(["import", str(bad), "--format", "jsonl", "--no-progress"]) == 1
    assert "line 2" in capsys.readouterr().err
    main(["stats", "--json"])
    assert json.loads(capsys.readouterr().out)["turns"] == 0


def test_recall_with_a_bad_budget_is_a_clear_error(env, capsys):
    assert main(["remember", "a note"]) == 0
    assert main(["recall", "anything", "--max-tokens", "0"]) == 2
    assert "--max-tokens must be between" in capsys.readouterr().err


def test_the_module_entry_point_runs(env):
    done = subprocess.run(
        [sys.executable, "-m", "smartsearch_mcp", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "smartsearch-mcp" in done.stdout


def test_embed_embeds_the_backlog_that_recall_leaves_to_the_background(
    env, capsys, monkeypatch, tiny_models
):
    config = env / "dense.toml"
    config.write_text(
        f"""
[nlp]
spacy_models = []
[models]
bi_encoder = "{tiny_models.sentence_transformer}"
[rank]
scorers = ["bi_encoder", "context", "lexical"]
embed_on_recall = 2
"""
    )
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "smartsearch-mcp embed" in capsys.readouterr().err
    assert main(["recall", "release Friday", "--namespace", "work", "--json"]) == 0
    assert any("not embedded yet" in w for w in json.loads(capsys.readouterr().out)["warnings"])

    assert main(["embed", "--no-progress"]) == 0
    assert "embedded" in capsys.readouterr().err
    assert main(["recall", "release Friday", "--namespace", "work", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert not any("not embedded yet" in w for w in data["warnings"])
    assert data["rankers"] == ["bi_encoder", "context", "lexical"]
    assert main(["embed", "--no-progress"]) == 0
    assert "embedded 0 passages" in capsys.readouterr().err


def test_embed_without_a_bi_encoder_says_there_is_nothing_to_do(env, capsys):
    assert main(["embed", "--no-progress"]) == 0
    assert "nothing to embed" in capsys.readouterr().err


def test_a_recall_of_an_empty_namespace_says_where_the_turns_are(env, capsys):
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["recall", "release Friday", "--namespace", "elsewhere"]) == 0
    out = capsys.readouterr().out
    assert "No stored memory matched" in out
    assert "namespace 'elsewhere' holds no turns" in out and "'work'" in out


def test_remember_stores_a_note_that_recall_then_finds(env, capsys, monkeypatch):
    args = ["--namespace", "work"]
    assert main(["remember", "The staging database is Postgres 16.", *args]) == 0
    assert "Remembered as turn 1 in namespace 'work'" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("Standup moved to 9:30.\n"))
    assert main(["remember", "--speaker", "Ana", "--session-id", "s1", "--json", *args]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert stored["stored"] == 1 and stored["session_id"] == "s1"
    monkeypatch.setattr("sys.stdin", io.StringIO("Standup moved to 9:30.\n"))
    assert main(["remember", "-", "--speaker", "Ana", "--session-id", "s1", *args]) == 0
    assert "Already stored as turn 2" in capsys.readouterr().out
    assert main(["recall", "which database is staging on?", "--json", *args]) == 0
    passages = json.loads(capsys.readouterr().out)["passages"]
    assert passages[0]["text"] == "The staging database is Postgres 16."
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


def test_a_reader_that_stops_early_ends_the_command_quietly(env):
    source = FIXTURES / "exports" / "turns.jsonl"
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    command = [sys.executable, "-m", "smartsearch_mcp", "export", "--all"]
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.close()  # `... | head -0`: the pipe is gone before anything is written
    error = reader.stderr.read().decode()
    assert reader.wait(timeout=120) == 141
    assert "Traceback" not in error and "BrokenPipeError" not in error


def _git_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "app"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    return repo


def _namespaces(capsys) -> dict[str, int]:
    capsys.readouterr()
    assert main(["stats", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["namespaces"]


def test_inside_a_git_repository_every_command_uses_the_project_namespace(env, capsys, monkeypatch):
    from smartsearch_mcp.namespaces import project_namespace

    project = project_namespace(_git_repo(env, monkeypatch))
    assert main(["remember", "The deploy key lives in the vault."]) == 0
    source = env / "notes.jsonl"
    source.write_text('{"text": "Imported note about the vault."}\n')
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert _namespaces(capsys) == {project: 2}
    assert main(["export", "-o", str(env / "out.jsonl")]) == 0
    assert len(_exported(env / "out.jsonl")) == 2
    assert main(["grep", "vault"]) == 0
    assert "2 turns contain 'vault'" in capsys.readouterr().out


def test_outside_a_git_repository_every_command_uses_the_default_namespace(
    env, capsys, monkeypatch
):
    monkeypatch.chdir(env)
    assert main(["remember", "A note from a plain folder."]) == 0
    assert "namespace 'default'" in capsys.readouterr().out
    assert main(["export", "-o", str(env / "out.jsonl")]) == 0
    assert [t["namespace"] for t in _exported(env / "out.jsonl")] == ["default"]


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


@pytest.mark.parametrize(
    ("argv", "wording"),
    [
        (["remember", "a note", "--role", "robot"], "--role must be one of"),
        (["remember", "a note", "--timestamp", "someday"], "--timestamp: "),
        (["grep", "(unclosed", "--regex"], "leave out --regex"),
        (["timeline", "--limit", "0"], "--limit must be"),
        (["timeline", "--since", "2024-02-01", "--until", "2024-01-01"], "--since must be"),
        (["recall", "x", "--since", "not a date at all"], "since"),
    ],
)
def test_usage_mistakes_exit_2_in_the_command_lines_words(env, capsys, argv, wording):
    assert main(["remember", "a first note"]) == 0  # read-only commands need a database
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and wording in err
    assert "turns[0]" not in err and "regex=false" not in err


def test_argparse_mistakes_exit_2(env, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["recall", "x", "--max-tokens", "many"])
    assert exit_.value.code == 2


def test_counts_are_singular_for_one(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    source = env / "one.jsonl"
    source.write_text('{"text": "the only vault note", "session_id": "s"}\n')
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 0
    assert "imported 1 turn in 1 session (0 duplicates skipped)" in capsys.readouterr().err
    assert main(["grep", "vault"]) == 0
    out = capsys.readouterr().out
    assert "1 turn contains 'vault'" in out and "1 match)" in out


def test_bench_with_a_missing_data_path_says_where_the_data_comes_from(env, capsys):
    assert main(["bench", "locomo", str(env / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "github.com/snap-research/locomo" in err and "locomo10.json" in err
    assert main(["bench", "beam", str(env / "nowhere")]) == 1
    assert "github.com/mohammadtavakoli78/BEAM" in capsys.readouterr().err
    assert main(["bench", "longmemeval", str(env / "nowhere.json")]) == 1
    err = capsys.readouterr().err
    assert "github.com/xiaowu0162/LongMemEval" in err and "longmemeval_s" in err


def test_a_recall_of_an_empty_memory_loads_no_model(env):
    script = (
        "import sys; from smartsearch_mcp.cli import main; "
        "assert main(['remember', 'a note elsewhere', '--namespace', 'other']) == 0; "
        "code = main(['--config', 'offline', 'recall', 'what did we decide?', "
        "'--namespace', 'work']); "
        "heavy = ('spacy', 'torch', 'sentence_transformers'); "
        "print(sorted(m for m in heavy if m in sys.modules)); "
        "sys.exit(code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.delenv("SMARTSEARCH_CONFIG", raising=False)
    monkeypatch.delenv("SMARTSEARCH_NAMESPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_doctor_without_config_says_which_preset_it_chose_and_why(no_config, capsys, monkeypatch):
    from smartsearch_mcp.models import presets

    chosen = presets.PresetChoice("offline", "the offline packages are installed")
    monkeypatch.setattr(presets, "choose_preset", lambda: chosen)
    assert main(["doctor", "--skip-models"]) == 0
    out = capsys.readouterr().out
    assert "config: preset offline (chosen because the offline packages are installed" in out
    assert "namespace 'default' (scope.default_namespace:" in out
    assert out.count("serve --db") == 1 and "--config offline" in out  # the Claude Code line


def test_commands_that_rank_nothing_do_not_choose_a_preset(no_config, capsys, monkeypatch):
    from smartsearch_mcp.models import presets

    def probe() -> presets.PresetChoice:
        raise AssertionError("a preset was chosen (the hub may be probed) for no ranking")

    monkeypatch.setattr(presets, "choose_preset", probe)
    assert main(["remember", "a note"]) == 0
    assert main(["grep", "note"]) == 0
    assert main(["stats"]) == 0


def test_recall_grep_and_timeline_say_which_namespace_they_searched_and_why(
    env, capsys, monkeypatch
):
    monkeypatch.chdir(env)
    assert main(["remember", "a note"]) == 0
    for argv in (["recall", "note"], ["grep", "note"], ["timeline"]):
        capsys.readouterr()
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert "searched namespace 'default' (scope.default_namespace:" in err, argv
    assert main(["grep", "note", "--json"]) == 0
    assert "searched" not in capsys.readouterr().err


@pytest.mark.anyio
async def test_recall_through_a_running_http_server_answers_from_its_memory(
    env, capsys, monkeypatch
):
    from servers import http_server

    served = env / "served.db"
    monkeypatch.chdir(env)
    remember = ["remember", "The gate code is 4711.", "--db", str(served)]
    assert await anyio.to_thread.run_sync(main, remember) == 0
    async with http_server(served, env / "lexical.toml") as (base, _):
        capsys.readouterr()
        # An empty local database: only the server's memory can answer.
        argv = ["recall", "gate code", "--db", str(env / "empty.db"), "--server", f"{base}/mcp"]
        assert await anyio.to_thread.run_sync(main, argv) == 0
        out, err = capsys.readouterr()
        assert "The gate code is 4711." in out
        assert "searched namespace 'default'" in err
        assert await anyio.to_thread.run_sync(main, [*argv, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["passages"]


@pytest.mark.anyio
async def test_recall_through_a_server_without_its_token_says_it_needs_the_token(
    env, capsys, monkeypatch
):
    from servers import http_server

    monkeypatch.chdir(env)
    monkeypatch.delenv("SMARTSEARCH_TOKEN", raising=False)
    token = ["--token", "s3cret-t0ken-0123456789"]
    async with http_server(env / "served.db", env / "lexical.toml", *token) as (base, _):
        capsys.readouterr()
        argv = ["recall", "gate code", "--server", f"{base}/mcp"]
        assert await anyio.to_thread.run_sync(main, argv) == 1
        assert "needs its bearer token (no token given)" in capsys.readouterr().err
        monkeypatch.setenv("SMARTSEARCH_TOKEN", "wrong")
        assert await anyio.to_thread.run_sync(main, argv) == 1
        assert "token in $SMARTSEARCH_TOKEN was refused" in capsys.readouterr().err


def test_recall_through_a_server_that_is_not_there_says_what_to_do(env, capsys, monkeypatch):
    monkeypatch.chdir(env)
    monkeypatch.setenv("SMARTSEARCH_URL", "http://127.0.0.1:9/mcp")
    assert main(["recall", "anything"]) == 1
    err = capsys.readouterr().err
    assert "cannot recall through the server at http://127.0.0.1:9/mcp" in err
    assert "SMARTSEARCH_URL" in err


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
