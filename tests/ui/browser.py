"""How the browser tests find a browser and start the memory browser: the system's Chromium
(Debian's `chromium` package; $SMARTSEARCH_CHROMIUM names another), driven by Playwright for
Python. Without them the tests are skipped — unless $SMARTSEARCH_REQUIRE_BROWSER is set, as CI
sets it, where a missing browser fails the run instead."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_path() -> str:
    """The Chromium to drive, or skip (fail when $SMARTSEARCH_REQUIRE_BROWSER is set)."""
    given = os.environ.get("SMARTSEARCH_CHROMIUM")
    found = given or next((p for name in CANDIDATES if (p := shutil.which(name))), None)
    problem = None
    if not found:
        problem = "no Chromium found (apt-get install chromium, or set $SMARTSEARCH_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problem = "Playwright for Python is not installed (pip install playwright)"
    if problem is not None:
        if os.environ.get("SMARTSEARCH_REQUIRE_BROWSER"):
            pytest.fail(f"browser tests required but cannot run: {problem}")
        pytest.skip(problem)
    assert found is not None
    return found


@contextmanager
def running_ui(db: Path, *extra: str) -> Iterator[str]:
    """`smartsearch-mcp ui` on `db` with the `lexical.toml` beside it (`write_config`) in a
    subprocess started in the database's folder (a free port, no browser opened); yields the
    URL it printed, carrying the token; stopped afterwards."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        ),
        "HF_HUB_OFFLINE": "1",
    }
    command = [
        sys.executable,
        "-m",
        "smartsearch_mcp",
        "ui",
        "--db",
        db.name,
        "--config",
        "lexical.toml",
        "--namespace",
        "default",
        "--port",
        "0",
        "--no-browser",
        *extra,
    ]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=db.parent
    )
    errors: list[str] = []
    drain = threading.Thread(target=lambda: errors.extend(process.stderr or []), daemon=True)
    drain.start()
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("open http://"):
            process.wait(timeout=30)
            raise AssertionError(f"ui did not start: {line!r} {''.join(errors)}")
        yield line.split(" ", 1)[1].strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)
