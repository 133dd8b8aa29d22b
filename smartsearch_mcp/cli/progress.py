"""Progress bars on stderr for the long commands (import, embed), or none."""

from __future__ import annotations

import sys
from typing import Protocol


class Progress(Protocol):
    """What a long command tells its progress bar."""

    def update(self, n: int) -> None: ...

    def close(self) -> None: ...


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(disabled: bool, description: str, total: int | None = None) -> Progress:
    """A tqdm bar on stderr (shown only on a terminal), or nothing when `disabled`."""
    if disabled:
        return _NoProgress()
    from tqdm import tqdm

    bar: Progress = tqdm(
        total=total, desc=description, unit=" turns", file=sys.stderr, disable=None
    )
    return bar
