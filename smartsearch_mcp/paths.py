"""Where the project keeps its own files: the platform's user cache dir (models unpacked,
ONNX copies, detect-secrets' patterns). Light to import: the hook path uses it."""

from __future__ import annotations

from pathlib import Path

APP_NAME = "smartsearch-mcp"


def user_cache_dir() -> Path:
    """The platform's user cache dir for this project (e.g. ~/.cache/smartsearch-mcp)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
