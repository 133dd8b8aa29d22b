"""The dispatcher: config errors at start, usage mistakes in the command line's words and
exit codes, the module entry point, a reader that goes away (smartsearch_mcp/cli/main.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smartsearch_mcp.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_an_unknown_config_key_fails_at_start_naming_the_key(env, capsys):
    bad = env / "bad.toml"
    bad.write_text("[truncation]\nmax_tokenz = 10\n")
    assert main(["--config", str(bad), "stats"]) == 1
    assert "truncation.max_tokenz" in capsys.readouterr().err


def test_the_module_entry_point_runs(env):
    done = subprocess.run(
        [sys.executable, "-m", "smartsearch_mcp", "--version"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "smartsearch-mcp" in done.stdout


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


def test_bench_with_a_missing_data_path_says_where_the_data_comes_from(env, capsys):
    assert main(["bench", "locomo", str(env / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "github.com/snap-research/locomo" in err and "locomo10.json" in err
    assert main(["bench", "beam", str(env / "nowhere")]) == 1
    assert "github.com/mohammadtavakoli78/BEAM" in capsys.readouterr().err
    assert main(["bench", "longmemeval", str(env / "nowhere.json")]) == 1
    err = capsys.readouterr().err
    assert "github.com/xiaowu0162/LongMemEval" in err and "longmemeval_s" in err
