"""`doctor` through the command line: the database check, the client config it prints, the
preset it chose (smartsearch_mcp/cli/doctor.py)."""

from __future__ import annotations

import pytest

from smartsearch_mcp.cli import main


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


def test_doctor_without_config_says_which_preset_it_chose_and_why(no_config, capsys, monkeypatch):
    from smartsearch_mcp.models import presets

    chosen = presets.PresetChoice("offline", "the offline packages are installed")
    monkeypatch.setattr(presets, "choose_preset", lambda: chosen)
    assert main(["doctor", "--skip-models"]) == 0
    out = capsys.readouterr().out
    assert "config: preset offline (chosen because the offline packages are installed" in out
    assert "namespace 'default' (scope.default_namespace:" in out
    assert out.count("serve --db") == 1 and "--config offline" in out  # the Claude Code line
