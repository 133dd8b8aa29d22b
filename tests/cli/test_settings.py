"""What the common options resolve to: the namespace every command uses and says it used,
and the preset only ranking commands choose (smartsearch_mcp/cli/settings.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smartsearch_mcp.cli import main


def _exported(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


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
