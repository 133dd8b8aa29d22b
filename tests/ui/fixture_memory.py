"""The memory the browser tests open: two sessions of a small conversation (one with a turn
whose text is a script tag), a note in another namespace the page must never show, and the
lexical configuration (no model to load)."""

from __future__ import annotations

import threading
import tomllib
from pathlib import Path

import anyio

from smartsearch_mcp.config import Config
from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.types import TurnInput

NAMESPACE = "default"
OTHER_NAMESPACE = "secret-project"
XSS = (
    "<script>window.__pwned = 1; document.title = 'pwned'</script>"
    '<img src=x onerror="window.__pwned = 2">'
)
SECRET_TEXT = "The vault code of the other project is 4711."

# Lexical ranking without spaCy (nothing to load), with the lexical preset's adjustments.
CONFIG_TOML = """
[nlp]
spacy_models = []
[retrieval]
dense = false
[rank]
scorers = ["lexical"]
adjust = ["burst_credit", "reply_credit", "echo_discount", "slice_discount", "time_range"]
"""
LEXICAL = Config().with_overrides(**tomllib.loads(CONFIG_TOML))


def write_config(folder: Path) -> Path:
    """The configuration file of `LEXICAL`, as `lexical.toml` in `folder`."""
    path = folder / "lexical.toml"
    path.write_text(CONFIG_TOML)
    return path


TRIP = [
    TurnInput("We fly to Lisbon on 3 June.", "Ann", timestamp="2026-05-01T09:00:00"),
    TurnInput("Noted: Lisbon, 3 June. Which hotel?", "Bo", timestamp="2026-05-01T09:01:00"),
    TurnInput("The hotel is Casa do Rio near the river.", "Ann", timestamp="2026-05-01T09:02:00"),
    TurnInput(
        "We moved the Lisbon flight to 5 June instead.", "Ann", timestamp="2026-05-20T18:00:00"
    ),
]
WORK = [
    TurnInput("The release moves to Friday.", "Cy", timestamp="2026-06-02T10:00:00"),
    TurnInput(XSS, "Mallory", timestamp="2026-06-02T10:05:00"),
    TurnInput("Connection refused on port 5432 again.", "Cy", timestamp="2026-06-03T11:00:00"),
]


def build_memory(path: Path) -> Path:
    """The fixture database at `path` (SQLite)."""

    async def build() -> None:
        store = await SQLiteStore.open(path)
        try:
            await store.remember(NAMESPACE, "trip", TRIP)
            await store.remember(NAMESPACE, "work", WORK)
            await store.remember(OTHER_NAMESPACE, "vault", [TurnInput(SECRET_TEXT, "Eve")])
        finally:
            await store.close()

    # In a thread of its own: the browser tests' Playwright runs an event loop in this one.
    failures: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(build)
        except BaseException as exc:
            failures.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if failures:
        raise failures[0]
    return path
