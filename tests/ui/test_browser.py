"""The memory browser end to end: `smartsearch-mcp ui` on the fixture memory, driven in
headless Chromium and headless Firefox alike (`pages.py`) — navigate, search and read the
trace and the cut line, forget with confirmation, a turn holding a script tag shown as text
and never run, no console error, uncaught exception, dialog or Content-Security-Policy
violation, phone width and dark mode. With $SMARTSEARCH_UI_SCREENSHOTS set to a folder
(docs/ui), each view's screenshot in Chromium is saved there, Firefox's in its firefox/."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser import running_ui
from fixture_memory import SECRET_TEXT, XSS, build_memory, write_config
from pages import BROWSERS, PHONE, Browser, Page, launched

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=BROWSERS)
def browser(request: pytest.FixtureRequest) -> Iterator[Browser]:
    with launched(request.param) as opened:
        yield opened


@pytest.fixture(scope="module")
def ui_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("ui")
    db = build_memory(folder / "memory.db")
    write_config(folder)
    with running_ui(db) as url:
        yield url


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    with browser.new_page() as opened:
        yield opened


def _shot(page: Page, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("SMARTSEARCH_UI_SCREENSHOTS") or tmp_path)
    if page.browser != "chromium":
        folder = folder / page.browser
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(folder / f"{name}.png")


def _base(url: str) -> str:
    return url.split("?", 1)[0].rstrip("/")


def test_the_printed_url_opens_the_overview_and_the_token_leaves_the_address(
    page: Page, ui_url: str, tmp_path: Path
):
    page.goto(ui_url)
    assert "token=" not in page.url
    assert page.text("h1") == "Overview"
    sessions = page.text("#sessions")
    assert "trip" in sessions and "work" in sessions and "vault" not in sessions
    _shot(page, "overview", tmp_path)
    page.goto(_base(ui_url) + "/")  # the cookie carries the token now
    assert page.text("h1") == "Overview"
    assert page.errors == []


def test_without_the_token_nothing_is_shown(browser: Browser, ui_url: str):
    with browser.new_page() as page:
        page.goto(_base(ui_url) + "/session?ns=default&id=trip")
        assert "needs the token of this run" in page.text("body")
        assert "Lisbon" not in page.html()


def test_a_session_shows_its_turns_and_a_script_in_a_turn_stays_text(
    page: Page, ui_url: str, tmp_path: Path
):
    page.goto(ui_url)
    page.click_role("link", "work", navigates=True)
    page.wait_for("#turns")
    assert XSS in page.texts("#turns .text")  # shown verbatim, as text
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.title") != "pwned"
    assert page.count("#turns script") == 0 and page.count("#turns img") == 0
    _shot(page, "session", tmp_path)
    assert page.errors == []


def test_the_timeline_filters_by_date(page: Page, ui_url: str, tmp_path: Path):
    page.goto(ui_url)
    page.click_role("link", "Timeline", navigates=True)
    assert page.count("#days h2") >= 3
    page.fill("input[name=since]", "2026-06-01")
    page.fill("input[name=until]", "2026-06-03")
    page.click_role("button", "Show", navigates=True)
    page.wait_for_url("/timeline?since=")
    days = page.text("#days")
    assert "The release moves to Friday." in days and "Lisbon" not in days
    assert page.evaluate("window.__pwned") is None
    _shot(page, "timeline", tmp_path)
    assert page.errors == []


def test_search_replays_recall_with_the_trace_and_the_cut_line(
    page: Page, ui_url: str, tmp_path: Path
):
    page.goto(ui_url)
    page.click_role("link", "Search", navigates=True)
    page.fill("input[name=q]", "When is the Lisbon flight in June 2026?")
    page.fill("input[name=max_tokens]", "120")
    page.click_role("button", "Search", navigates=True)
    page.wait_for("#cut-line")
    assert page.text("#stop-reason") in ("budget", "threshold", "top_k")
    first_why = "#kept .passage details.why"  # the first passage's, open
    assert page.attribute(first_why, "open") is not None
    trace = page.text(first_why)
    assert "Rankers" in trace and "lexical" in trace and "Found by" in trace
    assert "time_range" in trace  # the question's month moved it: before → after
    assert "June 2026" in page.text("#date-window")
    assert page.count("#below .passage") >= 1
    assert "Adjustments" not in page.text("#below details.why")  # closed
    page.click("#below details.why summary")
    assert "Adjustments" in page.text("#below details.why")
    assert SECRET_TEXT not in page.html()
    _shot(page, "search", tmp_path)
    page.resize(PHONE)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, overflow
    _shot(page, "search-phone", tmp_path)
    assert page.errors == []


def test_a_search_that_finds_the_script_turn_shows_it_as_text(page: Page, ui_url: str):
    page.goto(ui_url)
    page.goto(_base(ui_url) + "/search?q=window+pwned+script&max_tokens=400")
    assert XSS in page.text("#replay")
    page.goto(_base(ui_url) + "/search?mode=grep&q=__pwned")
    assert page.count("#grep mark") >= 1
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.title") != "pwned"
    assert page.errors == []


def test_every_view_fits_a_phone(page: Page, ui_url: str):
    page.resize(PHONE)
    page.goto(ui_url)
    base = _base(ui_url)
    for path in ("/", "/session?ns=default&id=work", "/timeline", "/forget?turn=1"):
        page.goto(base + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, (path, overflow)
    assert page.errors == []


def test_the_page_errors_are_seen_a_blocked_inline_script_and_a_dialog(page: Page, ui_url: str):
    """The harness's own check: an empty `errors` means something."""
    page.goto(ui_url)
    page.evaluate(
        "document.body.append(Object.assign(document.createElement('script'),"
        " {textContent: 'window.__inline = 1'}));"
        " setTimeout(() => alert('hello'), 0)"
    )

    def seen() -> tuple[bool, bool]:
        blocked = any(re.search("Content.Security.Policy", error) for error in page.errors)
        dialog = any("dialog" in error and "hello" in error for error in page.errors)
        return blocked, dialog

    deadline = time.monotonic() + 5
    while seen() != (True, True) and time.monotonic() < deadline:
        page.evaluate("1")  # the browser's events arrive meanwhile
    assert seen() == (True, True), page.errors
    assert page.evaluate("window.__inline") is None  # the policy blocked it


def test_dark_mode_follows_the_system(browser: Browser, ui_url: str, tmp_path: Path):
    with browser.new_page(dark=True) as dark:
        dark.goto(ui_url)
        dark.goto(_base(ui_url) + "/search?q=Lisbon+hotel+flight&max_tokens=150")
        background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 23, 26)", background
        _shot(dark, "search-dark", tmp_path)
        assert dark.errors == []


def test_forget_asks_for_confirmation_then_deletes(browser: Browser, tmp_path: Path):
    db = build_memory(tmp_path / "memory.db")
    write_config(tmp_path)
    with running_ui(db, "--allow-forget") as url, browser.new_page() as page:
        page.goto(url)
        page.click_role("link", "trip", navigates=True)
        page.click("#turn-3 .forget", navigates=True)
        page.wait_for("#forget-confirm")
        assert "Casa do Rio" in page.text("main")
        _shot(page, "forget", tmp_path)
        page.click_role("link", "Cancel", navigates=True)
        assert "Casa do Rio" in page.text("#turns")  # nothing deleted
        page.click("#turn-3 .forget", navigates=True)
        page.click_role("button", "Delete")
        page.wait_for("#forget-status[data-done]")
        page.wait_for_url("/session?")
        page.wait_for("#turns")
        turns = page.text("#turns")
        assert "Casa do Rio" not in turns and "We fly to Lisbon" in turns
        assert page.errors == []


def test_a_read_only_page_offers_no_deletion(page: Page, ui_url: str):
    page.goto(ui_url)
    page.goto(_base(ui_url) + "/forget?turn=1")
    assert page.count("#read-only") == 1
    assert page.count("#forget-confirm") == 0
    assert page.count(".forget") == 0
    assert page.errors == []
