"""Fixtures of the command-line tests: a database and the lexical config in tmp_path, or no
config at all (the preset is chosen)."""

from __future__ import annotations

from pathlib import Path

import pytest
from servers import LEXICAL_TOML


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "lexical.toml"
    config.write_text(LEXICAL_TOML)
    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    monkeypatch.delenv("SMARTSEARCH_NAMESPACE", raising=False)
    return tmp_path


@pytest.fixture
def no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.delenv("SMARTSEARCH_CONFIG", raising=False)
    monkeypatch.delenv("SMARTSEARCH_NAMESPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path
