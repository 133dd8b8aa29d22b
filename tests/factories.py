"""Small builders for the stored types, shared by tests of pure pipeline functions."""

from __future__ import annotations

from typing import Any

from smartsearch_mcp.types import Passage, Turn


def make_turn(turn_id: int = 1, text: str = "hello", **fields: Any) -> Turn:
    """A stored turn with plain defaults; any field can be given."""
    values: dict[str, Any] = {
        "id": turn_id,
        "namespace": "default",
        "session_id": "s1",
        "position": turn_id,
        "speaker": None,
        "role": "user",
        "text": text,
        "timestamp": None,
        "timestamp_raw": None,
        "created_at": "2024-01-01T00:00:00Z",
        "metadata": {},
    }
    values.update(fields)
    return Turn(**values)


def make_passage(turn_id: int = 1, text: str = "hello", **fields: Any) -> Passage:
    """A passage covering a whole `make_turn` turn."""
    turn = make_turn(turn_id, text, **fields)
    return Passage(turn=turn, start=0, end=len(turn.text))
