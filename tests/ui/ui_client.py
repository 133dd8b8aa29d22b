"""The memory browser in process (Starlette's TestClient) over the fixture memory."""

from __future__ import annotations

from pathlib import Path

from fixture_memory import LEXICAL, NAMESPACE
from starlette.testclient import TestClient

from smartsearch_mcp.ui.access import ui_access
from smartsearch_mcp.ui.app import create_ui_app

TOKEN = "test-token-" + "x" * 24
PORT = 8770
BASE = f"http://127.0.0.1:{PORT}"


def ui_client(db: Path, allow_forget: bool) -> TestClient:
    """A client of the browser over `db` (not yet started: use it in a `with`)."""
    access = ui_access(TOKEN, PORT)
    app = create_ui_app(LEXICAL, str(db), NAMESPACE, access, allow_forget=allow_forget)
    return TestClient(app, base_url=BASE, follow_redirects=False)
