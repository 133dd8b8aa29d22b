"""install / uninstall against a temporary HOME holding existing client configs."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from smartsearch_mcp.cli import main
from smartsearch_mcp.install import remove_toml_table
from smartsearch_mcp.models import presets

CLAUDE_JSON = {
    "numStartups": 12,
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {}}},
    "projects": {"/work/app": {"allowedTools": []}},
}
SETTINGS = {
    "model": "opus",
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit"}]}],
    },
}
CODEX_TOML = """\
# my codex settings
model = "o4-mini"

[mcp_servers.docs]
command = "docs-mcp"
args = ["--port", "1"]

[profiles.fast]
model = "gpt-5-mini"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("SMARTSEARCH_DB", raising=False)
    monkeypatch.delenv("SMARTSEARCH_NAMESPACE", raising=False)
    monkeypatch.delenv("SMARTSEARCH_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    _installation_runs(monkeypatch, "default")
    return home


def _installation_runs(monkeypatch: pytest.MonkeyPatch, preset: str) -> None:
    """Without --config, the preset this machine can run is chosen: fix it for the test."""
    monkeypatch.setattr(presets, "choose_preset", lambda: presets.PresetChoice(preset, "test"))


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_claude_code_install_merges_server_and_hooks_keeps_a_backup_and_is_idempotent(
    home: Path, capsys
):
    _write_json(home / ".claude.json", CLAUDE_JSON)
    _write_json(home / ".claude" / "settings.json", SETTINGS)
    assert main(["install", "claude-code"]) == 0
    out = capsys.readouterr().out
    assert "+ mcpServers.smartsearch" in out and "+ hooks.UserPromptSubmit" in out

    claude = _read(home / ".claude.json")
    assert claude["numStartups"] == 12 and "github" in claude["mcpServers"]
    server = claude["mcpServers"]["smartsearch"]
    assert Path(server["command"]).is_absolute()
    assert server["args"][-1] == "serve"  # the server applies the namespace rule itself
    settings = _read(home / ".claude" / "settings.json")
    assert (
        settings["model"] == "opus"
        and settings["hooks"]["PreToolUse"] == SETTINGS["hooks"]["PreToolUse"]
    )
    stop_commands = [h["command"] for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert stop_commands[0] == "notify-send done"
    assert stop_commands[1].endswith("hook claude-code stop")
    assert settings["hooks"]["PreCompact"][0]["hooks"][0]["command"].endswith("pre-compact")
    backups = sorted(home.glob(".claude.json.bak-smartsearch-*"))
    assert len(backups) == 1 and json.loads(backups[0].read_text()) == CLAUDE_JSON

    before = (home / ".claude.json").read_text(), (home / ".claude" / "settings.json").read_text()
    assert main(["install", "claude-code"]) == 0
    assert "unchanged" in capsys.readouterr().out
    after = (home / ".claude.json").read_text(), (home / ".claude" / "settings.json").read_text()
    assert before == after

    assert main(["uninstall", "claude-code"]) == 0
    assert _read(home / ".claude.json")["mcpServers"] == CLAUDE_JSON["mcpServers"]
    assert _read(home / ".claude" / "settings.json") == SETTINGS


def test_dry_run_changes_nothing(home: Path, capsys):
    _write_json(home / ".claude.json", CLAUDE_JSON)
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    assert main(["install", "claude-code", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would be updated" in out and "would be created" in out and "nothing was written" in out
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before
    assert _read(home / ".claude.json") == CLAUDE_JSON


def test_a_project_install_refuses_a_database_url_with_a_password(
    home: Path, tmp_path: Path, monkeypatch, capsys
):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    url = "postgresql://ann:hunter2@db.example/mem"
    assert main(["install", "cursor", "--project", "--db", url]) != 0
    assert "PGPASSWORD" in capsys.readouterr().err
    assert not (project / ".cursor").exists()
    assert main(["install", "cursor", "--project", "--db", "postgresql://ann@db.example/mem"]) == 0


def test_project_install_writes_the_project_files(home: Path, tmp_path: Path, monkeypatch):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    assert main(["install", "claude-code", "--project"]) == 0
    assert "smartsearch" in _read(project / ".mcp.json")["mcpServers"]
    assert "UserPromptSubmit" in _read(project / ".claude" / "settings.json")["hooks"]
    assert not (home / ".claude.json").exists()


def test_claude_desktop_gets_the_default_namespace_and_cursor_the_namespace_rule(home: Path):
    assert main(["install", "claude-desktop"]) == 0
    desktop = _read(home / ".config" / "Claude" / "claude_desktop_config.json")
    assert desktop["mcpServers"]["smartsearch"]["args"][-2:] == ["--namespace", "default"]
    _write_json(home / ".cursor" / "mcp.json", {"mcpServers": {"other": {"command": "x"}}})
    assert main(["install", "cursor"]) == 0
    cursor = _read(home / ".cursor" / "mcp.json")["mcpServers"]
    assert set(cursor) == {"other", "smartsearch"}
    assert cursor["smartsearch"]["args"][-1] == "serve"
    assert "--namespace" not in cursor["smartsearch"]["args"]


def test_a_namespace_the_user_names_is_written_for_the_server_and_the_hooks(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("SMARTSEARCH_NAMESPACE", "work")
    assert main(["install", "claude-code"]) == 0
    server = _read(home / ".claude.json")["mcpServers"]["smartsearch"]
    assert server["args"][-2:] == ["--namespace", "work"]
    hooks = _read(home / ".claude" / "settings.json")["hooks"]["Stop"]
    assert hooks[-1]["hooks"][0]["command"].endswith("hook claude-code stop --namespace work")


def test_without_config_the_preset_this_machine_can_run_is_written(
    home: Path, monkeypatch: pytest.MonkeyPatch
):
    _installation_runs(monkeypatch, "offline")
    assert main(["install", "cursor"]) == 0
    args = _read(home / ".cursor" / "mcp.json")["mcpServers"]["smartsearch"]["args"]
    assert args[-3:] == ["serve", "--config", "offline"]


def test_codex_install_edits_only_its_table_and_uninstall_restores_the_file(home: Path):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_TOML)
    assert main(["install", "codex"]) == 0
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o4-mini" and data["profiles"]["fast"]["model"] == "gpt-5-mini"
    assert data["mcp_servers"]["docs"]["args"] == ["--port", "1"]
    assert data["mcp_servers"]["smartsearch"]["args"][-1] == "serve"
    assert config.read_text().startswith(CODEX_TOML.rstrip("\n"))  # comments kept
    hooks = _read(home / ".codex" / "hooks.json")["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "Stop"}
    first = config.read_text()
    assert main(["install", "codex"]) == 0
    assert config.read_text() == first
    assert main(["uninstall", "codex"]) == 0
    assert config.read_text().rstrip("\n") == CODEX_TOML.rstrip("\n")
    assert not (home / ".codex" / "hooks.json").exists()  # install made it; nothing else in it


def test_a_config_file_that_is_not_json_is_left_alone_with_a_clear_error(home: Path, capsys):
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text("{ not json")
    assert main(["install", "cursor"]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert (home / ".cursor" / "mcp.json").read_text() == "{ not json"


def test_an_inline_codex_definition_is_refused_rather_than_corrupted(home: Path, capsys):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    inline = 'mcp_servers = { smartsearch = { command = "old" } }\n'
    config.write_text(inline)
    assert main(["install", "codex"]) == 1
    assert "cannot edit Codex config.toml safely" in capsys.readouterr().err
    assert config.read_text() == inline


def test_removing_the_toml_table_keeps_every_other_line():
    text = (
        CODEX_TOML
        + '\n[mcp_servers.smartsearch]\ncommand = "x"\n[mcp_servers.smartsearch.env]\nA = "1"\n'
    )
    assert remove_toml_table(text) == CODEX_TOML + "\n"


def test_options_are_written_into_the_commands_and_reinstalling_with_them_changes_nothing(
    home: Path, tmp_path: Path
):
    argv = ["install", "claude-code", "--config", "offline", "--db", str(tmp_path / "m.db")]
    assert main(argv) == 0
    settings_file = home / ".claude" / "settings.json"
    first = settings_file.read_text()
    stop = _read(settings_file)["hooks"]["Stop"]
    assert len(stop) == 1
    command = stop[0]["hooks"][0]["command"]
    assert " hook claude-code stop --db " in command and "--config offline" in command
    server = _read(home / ".claude.json")["mcpServers"]["smartsearch"]["args"]
    assert "--db" in server and "offline" in server
    assert main(argv) == 0
    assert settings_file.read_text() == first
    assert main(["uninstall", "claude-code"]) == 0
    assert not settings_file.exists()  # install made it, and nothing else was in it
    assert not list(settings_file.parent.glob("settings.json.bak-*"))


@pytest.mark.parametrize("client", ["claude-code", "codex", "cursor", "claude-desktop"])
def test_installing_twice_is_unchanged_and_a_cycle_leaves_no_file_behind(
    home: Path, capsys, monkeypatch, client: str
):
    monkeypatch.setattr("sys.platform", "linux")
    assert main(["install", client]) == 0
    capsys.readouterr()
    assert main(["install", client]) == 0
    second = capsys.readouterr().out
    assert "unchanged" in second and "updated" not in second and "~" not in second
    assert main(["uninstall", client]) == 0
    assert [p for p in home.rglob("*") if p.is_file()] == []


def _clients_table() -> dict[str, list[str]]:
    """docs/clients.md's installer table: client -> [server entry, hooks, namespace]."""
    text = (Path(__file__).parents[2] / "docs" / "clients.md").read_text(encoding="utf-8")
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`[a-z-]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


@pytest.mark.parametrize("client", ["claude-code", "claude-desktop", "cursor", "codex"])
def test_the_clients_table_in_the_docs_says_what_install_writes(
    home: Path, capsys, monkeypatch, client: str
):
    monkeypatch.setattr("sys.platform", "linux")
    entry, hooks, namespace = _clients_table()[client]
    assert main(["install", client, "--dry-run"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    server_line = next(line for line in lines if "smartsearch" in line and "+" in line)
    written = re.findall(r"--namespace['\"]?,? ['\"]?([\w-]+)", server_line)
    said = re.findall(r"`--namespace ([\w-]+)`", namespace)
    assert written == said, (server_line, namespace)
    assert ("mcpServers.smartsearch" in entry) == ("mcpServers.smartsearch" in printed)
    assert ("[mcp_servers.smartsearch]" in entry) == ("[mcp_servers.smartsearch]" in printed)
    events = set(re.findall(r"`([A-Z][A-Za-z]+)`", hooks))
    assert events == set(re.findall(r"\+ hooks\.(\w+)", printed))


def _snippet_after(page: str, label: str) -> dict:
    """The first JSON block after `label` in a docs page."""
    block = re.search(r"```json\n(.*?)```", page.split(label, 1)[1], re.S)
    assert block, f"no JSON block after {label!r}"
    return json.loads(block.group(1))["mcpServers"]["smartsearch"]


@pytest.mark.parametrize("client", ["claude-desktop", "cursor"])
def test_the_by_hand_snippets_hold_the_args_install_writes(
    home: Path, capsys, monkeypatch, client: str
):
    """A user who writes the entry by hand from the README or docs/clients.md gets the server
    `install --config offline` writes (Claude Desktop: with --namespace default)."""
    monkeypatch.setattr("sys.platform", "linux")
    assert main(["install", client, "--config", "offline"]) == 0
    capsys.readouterr()
    path = (
        home / ".config" / "Claude" / "claude_desktop_config.json"
        if client == "claude-desktop"
        else home / ".cursor" / "mcp.json"
    )
    written = json.loads(path.read_text())["mcpServers"]["smartsearch"]["args"]
    root = Path(__file__).parents[2]
    clients = (root / "docs" / "clients.md").read_text(encoding="utf-8")
    label = (
        "**Claude Desktop** (`claude_desktop_config.json`)"
        if client == "claude-desktop"
        else "**Cursor** (`~/.cursor/mcp.json`)"
    )
    assert _snippet_after(clients, label)["args"] == written
    readme = (root / "README.md").read_text(encoding="utf-8")
    by_hand = _snippet_after(readme, "By hand,")["args"]
    if client == "claude-desktop":
        assert '`"--namespace", "default"`' in readme.split("By hand,", 1)[1].split("```", 1)[0]
        by_hand = [*by_hand, "--namespace", "default"]
    assert by_hand == written
