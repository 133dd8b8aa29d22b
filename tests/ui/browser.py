"""How the browser tests find their browsers and start the memory browser: the system's
Chromium (Debian's `chromium` package; $SMARTSEARCH_CHROMIUM names another), driven by
Playwright for Python, and the system's Firefox (Debian's `firefox-esr`; $SMARTSEARCH_FIREFOX
names another), driven over WebDriver BiDi (`firefox.py`). Without them the tests are skipped —
unless $SMARTSEARCH_REQUIRE_BROWSER is set, as CI sets it, where a missing browser fails the
run instead."""

from __future__ import annotations

import importlib.util
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
CHROMIUM = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FIREFOX = ("firefox-esr", "firefox")


def chromium_path() -> str:
    """The Chromium to drive, or skip (fail when $SMARTSEARCH_REQUIRE_BROWSER is set)."""
    return _browser_path(
        "SMARTSEARCH_CHROMIUM",
        CHROMIUM,
        "no Chromium found (apt-get install chromium, or set $SMARTSEARCH_CHROMIUM)",
        "playwright",
        "Playwright for Python is not installed (pip install playwright)",
    )


def firefox_path() -> str:
    """The Firefox to drive, or skip (fail when $SMARTSEARCH_REQUIRE_BROWSER is set)."""
    return _browser_path(
        "SMARTSEARCH_FIREFOX",
        FIREFOX,
        "no Firefox found (apt-get install firefox-esr, or set $SMARTSEARCH_FIREFOX)",
        "websockets",
        "websockets is not installed (pip install websockets), which drives Firefox",
    )


def _browser_path(
    variable: str, names: tuple[str, ...], missing: str, driver: str, no_driver: str
) -> str:
    given = os.environ.get(variable)
    found = given or next((p for name in names if (p := shutil.which(name))), None)
    problem = None
    if not found:
        problem = missing
    if importlib.util.find_spec(driver) is None:
        problem = no_driver
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
