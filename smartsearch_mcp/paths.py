"""Where the project keeps its own files: the platform's user cache dir (models unpacked,
ONNX copies, detect-secrets' patterns), and private directories made for them. Light to
import: the hook path uses it."""

from __future__ import annotations

from pathlib import Path

APP_NAME = "smartsearch-mcp"


def user_cache_dir() -> Path:
    """The platform's user cache dir for this project (e.g. ~/.cache/smartsearch-mcp)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def make_private_dir(directory: Path) -> None:
    """Create `directory` 0700 if it is missing, and its missing parents 0700 too (they were
    made by us, for it: `--db a/b/m.db`)."""
    missing = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
