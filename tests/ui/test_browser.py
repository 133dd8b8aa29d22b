"""The memory browser end to end: `smartsearch-mcp ui` on the fixture memory, driven in
headless Chromium — navigate, search and read the trace and the cut line, forget with
confirmation, a turn holding a script tag shown as text and never run, no Content-Security-
Policy violation, phone width and dark mode. With $SMARTSEARCH_UI_SCREENSHOTS set to a
folder (docs/ui), each view's screenshot is saved there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium_path, running_ui
from fixture_memory import SECRET_TEXT, XSS, build_memory, write_config

pytestmark = pytest.mark.slow

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def ui_url(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("ui")
    db = build_memory(folder / "memory.db")
    write_config(folder)
    with running_ui(db) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP)
    opened = context.new_page()
    opened.violations = []  # type: ignore[attr-defined]
    opened.on("console", lambda m: _note_violation(opened, m))
    yield opened
    context.close()


def _note_violation(page: Any, message: Any) -> None:
    if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
        page.violations.append(message.text)


def _shot(page: Any, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("SMARTSEARCH_UI_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=False)


def _base(url: str) -> str:
    return url.split("?", 1)[0].rstrip("/")


def test_the_printed_url_opens_the_overview_and_the_token_leaves_the_address(
    page: Any, ui_url: str, tmp_path: Path
):
    page.goto(ui_url)
    assert "token=" not in page.url
    assert page.locator("h1").inner_text() == "Overview"
    sessions = page.locator("#sessions").inner_text()
    assert "trip" in sessions and "work" in sessions and "vault" not in sessions
    _shot(page, "overview", tmp_path)
    page.goto(_base(ui_url) + "/", wait_until="load")  # the cookie carries the token now
    assert page.locator("h1").inner_text() == "Overview"
    assert page.violations == []


def test_without_the_token_nothing_is_shown(browser: Any, ui_url: str):
    context = browser.new_context()
    try:
        response = context.new_page().goto(_base(ui_url) + "/session?ns=default&id=trip")
        assert response.status == 401
    finally:
        context.close()


def test_a_session_shows_its_turns_and_a_script_in_a_turn_stays_text(
    page: Any, ui_url: str, tmp_path: Path
):
    page.goto(ui_url)
    page.get_by_role("link", name="work", exact=True).click()
    page.wait_for_selector("#turns")
    texts = page.locator("#turns .text").all_inner_texts()
    assert XSS in texts  # shown verbatim, as text
    assert page.evaluate("window.__pwned") is None
    assert page.title() != "pwned"
    assert page.locator("#turns script").count() == 0 and page.locator("#turns img").count() == 0
    _shot(page, "session", tmp_path)
    assert page.violations == []


def test_the_timeline_filters_by_date(page: Any, ui_url: str, tmp_path: Path):
    page.goto(ui_url)
    page.get_by_role("link", name="Timeline", exact=True).click()
    assert page.locator("#days h2").count() >= 3
    page.fill("input[name=since]", "2026-06-01")
    page.fill("input[name=until]", "2026-06-03")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**/timeline?since=*")
    days = page.locator("#days").inner_text()
    assert "The release moves to Friday." in days and "Lisbon" not in days
    assert page.evaluate("window.__pwned") is None
    _shot(page, "timeline", tmp_path)


def test_search_replays_recall_with_the_trace_and_the_cut_line(
    page: Any, ui_url: str, tmp_path: Path
):
    page.goto(ui_url)
    page.get_by_role("link", name="Search", exact=True).click()
    page.fill("input[name=q]", "When is the Lisbon flight in June 2026?")
    page.fill("input[name=max_tokens]", "120")
    page.get_by_role("button", name="Search").click()
    page.wait_for_selector("#cut-line")
    assert page.locator("#stop-reason").inner_text() in ("budget", "threshold", "top_k")
    first = page.locator("#kept .passage").first
    assert first.locator("details.why").get_attribute("open") is not None
    trace = first.locator("details.why").inner_text()
    assert "Rankers" in trace and "lexical" in trace and "Found by" in trace
    assert "time_range" in trace  # the question's month moved it: before → after
    assert "June 2026" in page.locator("#date-window").inner_text()
    assert page.locator("#below .passage").count() >= 1
    page.locator("#below details.why").first.locator("summary").click()
    assert "Adjustments" in page.locator("#below details.why").first.inner_text()
    assert SECRET_TEXT not in page.content()
    _shot(page, "search", tmp_path)
    page.set_viewport_size(PHONE)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, overflow
    _shot(page, "search-phone", tmp_path)
    assert page.violations == []


def test_a_search_that_finds_the_script_turn_shows_it_as_text(page: Any, ui_url: str):
    page.goto(ui_url)
    page.goto(_base(ui_url) + "/search?q=window+pwned+script&max_tokens=400")
    assert XSS in page.locator("#replay").inner_text()
    page.goto(_base(ui_url) + "/search?mode=grep&q=__pwned")
    assert page.locator("#grep mark").count() >= 1
    assert page.evaluate("window.__pwned") is None and page.title() != "pwned"


def test_dark_mode_follows_the_system(browser: Any, ui_url: str, tmp_path: Path):
    context = browser.new_context(viewport=DESKTOP, color_scheme="dark")
    try:
        dark = context.new_page()
        dark.goto(ui_url)
        dark.goto(_base(ui_url) + "/search?q=Lisbon+hotel+flight&max_tokens=150")
        background = dark.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 23, 26)", background
        _shot(dark, "search-dark", tmp_path)
    finally:
        context.close()


def test_forget_asks_for_confirmation_then_deletes(browser: Any, tmp_path: Path):
    db = build_memory(tmp_path / "memory.db")
    write_config(tmp_path)
    context = browser.new_context(viewport=DESKTOP)
    try:
        with running_ui(db, "--allow-forget") as url:
            page = context.new_page()
            page.goto(url)
            page.get_by_role("link", name="trip", exact=True).click()
            page.locator("#turn-3 .forget").click()
            page.wait_for_selector("#forget-confirm")
            assert "Casa do Rio" in page.locator("main").inner_text()
            _shot(page, "forget", tmp_path)
            page.get_by_role("link", name="Cancel").click()
            assert "Casa do Rio" in page.locator("#turns").inner_text()  # nothing deleted
            page.locator("#turn-3 .forget").click()
            page.get_by_role("button", name="Delete").click()
            page.wait_for_selector("#forget-status[data-done]")
            page.wait_for_url("**/session?**")
            turns = page.locator("#turns").inner_text()
            assert "Casa do Rio" not in turns and "We fly to Lisbon" in turns
    finally:
        context.close()


def test_a_read_only_page_offers_no_deletion(page: Any, ui_url: str):
    page.goto(ui_url)
    page.goto(_base(ui_url) + "/forget?turn=1")
    assert page.locator("#read-only").count() == 1
    assert page.locator("#forget-confirm").count() == 0
    assert page.locator(".forget").count() == 0
