"""The command lines a client launches and the snippets `doctor` prints: absolute paths,
URLs and preset names as given, passwords never shown (smartsearch_mcp/launch.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smartsearch_mcp.config import Config
from smartsearch_mcp.launch import (
    client_config_text,
    command_options,
    executable,
    server_command,
    shell_word,
    url_has_password,
)


def test_options_make_files_absolute_and_keep_urls_and_preset_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text("")
    assert command_options("m.db", "mine.toml", "proj") == [
        "--db",
        str(tmp_path / "m.db"),
        "--config",
        str(tmp_path / "mine.toml"),
        "--namespace",
        "proj",
    ]
    url = "postgresql://ann@db.example/memory"
    assert command_options(url, "offline", None) == ["--db", url, "--config", "offline"]
    assert command_options(":memory:", None, None) == ["--db", ":memory:"]
    assert command_options(None, None, None) == []


def test_the_server_command_is_this_program_serving():
    command = server_command(None, None, "proj")
    assert command[: len(executable())] == executable()
    assert command[len(executable()) :] == ["serve", "--namespace", "proj"]


def test_a_password_in_a_database_url_is_masked_in_the_snippets():
    url = "postgresql://ann:s3cret@db.example/memory"
    assert url_has_password(url) and not url_has_password("postgresql://ann@db.example/m")
    assert not url_has_password("/tmp/s3cret.db")
    text = client_config_text(url, None, None, Config())
    assert "s3cret" not in text and "PGPASSWORD" in text


def test_the_snippets_hold_json_a_client_reads(tmp_path: Path):
    text = client_config_text(str(tmp_path / "m.db"), None, "proj", Config())
    desktop = text.split("claude_desktop_config.json):\n", 1)[1].split("\n\n", 1)[0]
    entry = json.loads(desktop)["mcpServers"]["smartsearch"]
    assert entry["args"][-4:] == ["--db", str(tmp_path / "m.db"), "--namespace", "proj"]


@pytest.mark.parametrize(
    ("word", "shown"),
    [("plain", "plain"), ("two words", "'two words'"), ("$HOME", "'$HOME'"), ('a"b', "'a\"b'")],
)
def test_shell_words_are_quoted_only_when_a_shell_would_change_them(word: str, shown: str):
    assert shell_word(word) == shown
