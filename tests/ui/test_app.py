"""The browser's pages, in process: what each view shows, everything escaped, nothing of a
namespace the run does not serve, the search's recall exactly the `recall` tool's, forget
only when allowed and never a whole namespace, exports as `smartsearch-mcp export` writes."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import anyio
import pytest
from fixture_memory import LEXICAL, NAMESPACE, SECRET_TEXT, XSS
from mcp import Client
from starlette.testclient import TestClient
from ui_client import BASE, TOKEN, ui_client

from smartsearch_mcp.server import create_server
from smartsearch_mcp.ui.access import TOKEN_HEADER
from smartsearch_mcp.ui.app import template_environment


def _pre(page: str, element_id: str) -> str:
    match = re.search(rf'<pre id="{element_id}">(.*?)</pre>', page, re.S)
    assert match, page
    return html.unescape(match.group(1))


def test_the_overview_lists_sessions_with_dates_speakers_and_counts(client: TestClient):
    page = client.get("/").text
    assert "trip" in page and "work" in page
    assert "Ann, Bo" in page  # speakers, most turns first
    assert ">4</td>" in page and ">3</td>" in page
    assert "2026-05-01 09:00" in page
    assert "secret-project · 1" in page  # counted, as `stats` does; never browsable


def test_the_session_view_shows_turns_verbatim_with_ids_and_pages(client: TestClient):
    page = client.get("/session", params={"ns": "default", "id": "trip"}).text
    for text in ("We fly to Lisbon on 3 June.", "The hotel is Casa do Rio near the river."):
        assert text in page
    assert 'id="turn-1"' in page and "#1" in page


def test_a_long_session_is_paged(client: TestClient):
    client.app.app.state.browser.page_size = 2  # type: ignore[attr-defined]
    first = client.get("/session", params={"ns": "default", "id": "trip"}).text
    second = client.get("/session", params={"ns": "default", "id": "trip", "page": 2}).text
    assert "page 1 of 2" in first and "We fly to Lisbon" in first and "Casa do Rio" not in first
    assert "Casa do Rio" in second and "We fly to Lisbon" not in second


def test_memory_text_is_escaped_everywhere(client: TestClient):
    escaped = html.escape(XSS, quote=False)
    for path in (
        "/session?ns=default&id=work",
        "/timeline",
        "/search?q=script+pwned+window&max_tokens=400",
        "/search?q=window.__pwned&mode=grep",
        "/forget?turn=6",
    ):
        page = client.get(path).text
        assert "<script>window" not in page, path
        assert "<img src=x" not in page, path
        assert "&lt;script&gt;" in page or escaped in page, path
    scripts = re.findall(r"<script[^>]*>", client.get("/session?ns=default&id=work").text)
    assert scripts == ['<script src="/static/ui.js" defer>']


def test_every_page_names_its_icon_so_no_browser_asks_for_a_missing_favicon(client: TestClient):
    # Without one, browsers fetch /favicon.ico, and Chromium logs its 404 as a console error.
    pages = ("/", "/session?ns=default&id=trip", "/timeline", "/search", "/forget?turn=1")
    for path in (*pages, "/session?ns=default&id=nope"):  # the last one a 404 page
        assert '<link rel="icon" href="/static/icon.svg"' in client.get(path).text, path
    icon = client.get("/static/icon.svg")
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text.startswith("<svg")


def test_the_templates_autoescape():
    environment = template_environment()
    assert environment.from_string("{{ x }}").render(x="<b>") == "&lt;b&gt;"


def test_another_namespace_is_never_shown(client: TestClient):
    assert client.get("/session", params={"ns": "secret-project", "id": "vault"}).status_code == 404
    assert client.get("/", params={"ns": "secret-project"}).status_code == 404
    assert client.get("/forget", params={"turn": 8}).status_code == 404
    assert client.get("/export", params={"ns": "secret-project"}).status_code == 404
    for path in ("/timeline", "/search?q=vault+code", "/search?q=vault&mode=grep"):
        assert SECRET_TEXT not in client.get(path).text, path


def test_the_timeline_groups_turns_by_day_and_filters_by_date(client: TestClient):
    page = client.get("/timeline").text
    assert "<time>2026-05-01</time>" in page and "<time>2026-06-02</time>" in page
    june = client.get("/timeline", params={"since": "2026-06-01", "until": "2026-06-03"}).text
    assert "The release moves to Friday." in june
    assert "We fly to Lisbon" not in june and "Connection refused" not in june


def test_grep_finds_exact_text(client: TestClient):
    page = client.get("/search", params={"q": "port 5432", "mode": "grep"}).text
    assert "Connection refused on" in page and "<mark>port 5432</mark>" in page


@pytest.mark.anyio
async def test_the_pages_recall_is_the_recall_tools_answer(memory_db: Path):
    server = create_server(LEXICAL, str(memory_db), namespace=NAMESPACE)
    queries = [("When do we fly to Lisbon?", 1500), ("Lisbon hotel flight", 150), ("Friday", 40)]
    async with Client(server) as mcp_client:
        answers = [
            await mcp_client.call_tool("recall", {"query": q, "max_tokens": budget})
            for q, budget in queries
        ]

    def pages() -> list[str]:
        with ui_client(memory_db, allow_forget=False) as ui:
            ui.headers[TOKEN_HEADER] = TOKEN
            return [
                ui.get("/search", params={"q": q, "max_tokens": budget}).text
                for q, budget in queries
            ]

    for page, answer in zip(await anyio.to_thread.run_sync(pages), answers, strict=True):
        assert _pre(page, "recall-text") == answer.content[0].text
        ids = [int(i) for i in re.findall(r'<li class="passage kept" id="turn-(\d+)"', page)]
        assert ids == [p["id"] for p in answer.structured_content["passages"]]
        stop = re.search(r'<strong id="stop-reason">(\w+)</strong>', page)
        assert stop and stop.group(1) == answer.structured_content["stop_reason"]


def test_the_search_shows_each_passages_trace_and_the_cut(client: TestClient):
    page = client.get("/search", params={"q": "Lisbon flight hotel", "max_tokens": 150}).text
    assert page.count('class="passage kept"') >= 1
    assert 'id="cut-line"' in page
    assert "Just below the cut" in page
    assert "<td>lexical</td>" in page
    assert "Found by" in page and "Adjustments" in page


def test_a_read_only_page_deletes_nothing(read_only: TestClient):
    page = read_only.get("/forget", params={"turn": 1}).text
    assert "read-only" in page and 'id="forget-confirm"' not in page
    refused = read_only.post("/forget", json={"turn": 1}, headers={"origin": BASE})
    assert refused.status_code == 400 and "read-only" in refused.json()["error"]
    assert "We fly to Lisbon" in read_only.get("/session?ns=default&id=trip").text


def test_forget_asks_first_then_deletes_a_turn_or_a_session(client: TestClient):
    confirm = client.get("/forget", params={"turn": 1}).text
    assert 'id="forget-confirm"' in confirm and 'data-turn="1"' in confirm
    assert "We fly to Lisbon" in client.get("/session?ns=default&id=trip").text  # asked only
    deleted = client.post("/forget", json={"turn": 1}, headers={"origin": BASE})
    assert deleted.json()["deleted_turn_ids"] == [1]
    assert "We fly to Lisbon on 3 June" not in client.get("/session?ns=default&id=trip").text
    gone = client.post("/forget", json={"session": "work"}, headers={"origin": BASE})
    assert sorted(gone.json()["deleted_turn_ids"]) == [5, 6, 7]
    assert client.get("/session?ns=default&id=work").status_code == 404


@pytest.mark.parametrize(
    "body", [{}, {"turn": 1, "session": "trip"}, {"namespace": "default"}, {"turn": "1"}, []]
)
def test_forget_never_deletes_a_whole_namespace_or_guesses(client: TestClient, body: object):
    response = client.post("/forget", json=body, headers={"origin": BASE})
    assert response.status_code == 400
    assert "Casa do Rio" in client.get("/session?ns=default&id=trip").text


def test_forget_of_another_namespaces_turn_is_not_found(client: TestClient, memory_db: Path):
    response = client.post("/forget", json={"turn": 8}, headers={"origin": BASE})
    assert response.status_code == 404


def test_exports_are_jsonl_as_the_export_command_writes(client: TestClient):
    response = client.get("/export", params={"session": "trip"})
    assert response.headers["content-disposition"] == 'attachment; filename="trip.jsonl"'
    records = [json.loads(line) for line in response.text.splitlines()]
    assert records[0]["text"] == "We fly to Lisbon on 3 June."
    assert {r["session_id"] for r in records} == {"trip"} and len(records) == 4
    whole = client.get("/export").text.splitlines()
    assert len(whole) == 7
    assert SECRET_TEXT not in client.get("/export").text


def test_bad_input_is_a_page_saying_what_to_do(client: TestClient):
    response = client.get("/", params={"page": "x"})
    assert response.status_code == 400 and "page must be a whole number" in response.text
    assert client.get("/session", params={"ns": "default", "id": "nope"}).status_code == 404
