"""Run a snippet in a fresh Python process, to see what it imports or does from a cold start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def probe(code: str, timeout: float = 180) -> Any:
    """The JSON that `code` prints last, run by this Python with the checkout importable, the
    model hub switched off and no PATH; fails the test with its stderr when it fails."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": ""},
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
