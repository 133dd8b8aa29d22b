"""`smartsearch-mcp ui` on the command line: what it refuses before serving anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from smartsearch_mcp.cli import main


def test_a_missing_database_is_one_line_and_exit_1(tmp_path: Path, capsys):
    assert main(["ui", "--db", str(tmp_path / "none.db"), "--config", "lexical"]) == 1
    error = capsys.readouterr().err
    assert error.startswith("error: no database at") and "Traceback" not in error
    assert not (tmp_path / "none.db").exists()


def test_a_bad_port_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["ui", "--port", "99999", "--db", str(tmp_path / "m.db")]) == 2
    assert "--port 99999" in capsys.readouterr().err
