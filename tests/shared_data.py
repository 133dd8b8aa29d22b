"""Where the shared benchmark data is, for the tests that need the full files.

`$SMARTSEARCH_SHARED_DATA` when set, else `<repo root>/../shared/data`: CI runs `.ci/run` in a
fresh clone with a copy of shared/ beside it, and a developer's checkout sits next to it too.
The root is the clone as reached (not symlinks resolved), so "beside the clone" means beside
the folder the tests were run from. Tests that can run on a slice use tests/fixtures instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).absolute().parents[1]
ENV_VAR = "SMARTSEARCH_SHARED_DATA"


def shared_data_dir() -> Path:
    """The shared data folder ($SMARTSEARCH_SHARED_DATA, else <repo root>/../shared/data)."""
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        return Path(override).expanduser()
    return REPO_ROOT.parent / "shared" / "data"


def shared_path(relative: str) -> Path:
    """A path under the shared data folder; skips the calling test, saying where it looked
    and how to point elsewhere, when it is not there."""
    path = shared_data_dir() / relative
    if not path.exists():
        pytest.skip(
            f"needs the full shared benchmark data: {path} not found "
            f"(put shared/data beside the repository or set {ENV_VAR})"
        )
    return path
