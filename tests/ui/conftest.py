"""Fixtures of the memory browser's tests: the fixture memory and the app over it, in
process. This folder's helper modules (fixture_memory, ui_client, browser) are imported by
name, as tests/ does with its own."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).parent))

from fixture_memory import build_memory
from ui_client import TOKEN, ui_client

from smartsearch_mcp.ui.access import TOKEN_HEADER


@pytest.fixture
def memory_db(tmp_path: Path) -> Path:
    return build_memory(tmp_path / "memory.db")


@pytest.fixture
def anonymous(memory_db: Path) -> Iterator[TestClient]:
    """A client that has not sent the token."""
    with ui_client(memory_db, allow_forget=True) as client:
        yield client


@pytest.fixture
def client(memory_db: Path) -> Iterator[TestClient]:
    """A client of a run that allows deletions, sending the token as the page's script does."""
    with ui_client(memory_db, allow_forget=True) as client:
        client.headers[TOKEN_HEADER] = TOKEN
        yield client


@pytest.fixture
def read_only(memory_db: Path) -> Iterator[TestClient]:
    with ui_client(memory_db, allow_forget=False) as client:
        client.headers[TOKEN_HEADER] = TOKEN
        yield client
