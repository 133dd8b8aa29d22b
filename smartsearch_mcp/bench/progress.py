"""Progress bars on stderr (tqdm), or a silent stand-in with the same methods."""

from __future__ import annotations

import sys
from typing import Any


class NoProgress:
    """A progress bar that shows nothing."""

    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, description: str) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(enabled: bool, total: int, description: str, unit: str) -> Any:
    """A tqdm bar on stderr, or `NoProgress` when disabled."""
    if not enabled:
        return NoProgress()
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit=unit, file=sys.stderr, dynamic_ncols=True)
