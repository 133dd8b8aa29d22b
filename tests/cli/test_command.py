"""Commands as data: each defines its options beside its handler, says what the dispatcher
must know about it, and building the parser imports none of the commands' work
(smartsearch_mcp/cli/command.py, smartsearch_mcp/cli/main.py)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from servers import REPO, subprocess_env

from smartsearch_mcp.cli import build_parser
from smartsearch_mcp.cli.command import Command
from smartsearch_mcp.cli.main import COMMANDS


def _nothing(parser: argparse.ArgumentParser) -> None:
    pass


def test_a_command_has_exactly_one_handler():
    with pytest.raises(TypeError, match="exactly one"):
        Command("x", help="", add_options=_nothing)
    with pytest.raises(TypeError, match="exactly one"):
        Command("x", help="", add_options=_nothing, run=lambda a, c: 0, run_unguarded=lambda a: 0)


# What each command must be given to parse.
_REQUIRED = {
    "recall": ["a query"],
    "grep": ["a pattern"],
    "hook": ["codex", "stop"],
    "import": ["a-file"],
    "install": ["cursor"],
    "uninstall": ["cursor"],
    "migrate": ["--from", "a.db", "--to", "b.db"],
}


def test_every_command_is_listed_once_and_parses_to_itself():
    names = [command.name for command in COMMANDS]
    assert len(names) == len(set(names))
    parser = build_parser()
    for command in COMMANDS:
        argv = [command.name, *_REQUIRED.get(command.name, [])]
        assert parser.parse_args(argv).command is command


def test_only_the_commands_whose_models_matter_choose_a_preset():
    ranking = {command.name for command in COMMANDS if command.ranks}
    assert ranking == {
        "serve",
        "recall",
        "embed",
        "import",
        "doctor",
        "models",
        "install",
        "uninstall",
        "ui",
        "bench",
    }


def test_bad_input_is_a_usage_error_except_in_the_files_import_and_bench_read():
    codes = {command.name: command.input_error_exit for command in COMMANDS}
    assert {name for name, code in codes.items() if code == 1} == {"import", "bench"}
    assert set(codes.values()) == {1, 2}


def test_only_the_hook_runs_unguarded():
    assert [c.name for c in COMMANDS if c.run_unguarded is not None] == ["hook"]


def test_building_the_parser_imports_none_of_the_commands_work():
    # A client's hook runs `smartsearch-mcp hook` on every prompt: what every command needs
    # at start is the small shared ground, nothing a command imports when it runs.
    probe = (
        "import sys\n"
        "from smartsearch_mcp.cli import build_parser\n"
        "build_parser()\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    ours = {m for m in loaded if m.startswith("smartsearch_mcp") and ".cli" not in m}
    assert ours <= {
        "smartsearch_mcp",
        "smartsearch_mcp.config",
        "smartsearch_mcp.namespaces",
        "smartsearch_mcp.paths",
        "smartsearch_mcp.stages",
        "smartsearch_mcp.telemetry",
        "smartsearch_mcp.tokens",
        "smartsearch_mcp.types",
    }
    heavy = {"tqdm", "uvicorn", "httpx", "mcp", "pydantic", "numpy", "torch", "webbrowser"}
    assert loaded & heavy == set()
