"""The browser's access rules, in process: no request without the token succeeds; Host and
Origin must name this server (DNS rebinding); a change needs the token header and a
same-origin request (CSRF); every answer carries a strict Content-Security-Policy."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient
from ui_client import PORT, TOKEN

from smartsearch_mcp.types import ConfigError
from smartsearch_mcp.ui.access import CONTENT_SECURITY_POLICY, TOKEN_HEADER, ui_access

PAGES = [
    "/",
    "/session?ns=default&id=trip",
    "/timeline",
    "/search?q=Lisbon",
    "/search?q=Lisbon&mode=grep",
    "/forget?turn=1",
    "/export?session=trip",
    "/static/ui.js",
    "/static/ui.css",
    "/no-such-page",
]


@pytest.mark.parametrize("path", PAGES)
def test_no_page_answers_without_the_token(anonymous: TestClient, path: str):
    response = anonymous.get(path)
    assert response.status_code == 401
    assert "token" in response.text
    assert "Lisbon" not in response.text


@pytest.mark.parametrize(
    "credentials",
    [
        {"headers": {TOKEN_HEADER: "wrong-token-" + "y" * 24}},
        {"cookies": {f"smartsearch-ui-{PORT}": "wrong"}},
        {"cookies": {"smartsearch-ui-1": TOKEN}},  # another run's cookie name
        {"params": {"token": TOKEN[:-1]}},
    ],
)
def test_a_wrong_token_is_refused(anonymous: TestClient, credentials: dict):
    cookies = credentials.pop("cookies", None)
    if cookies:
        anonymous.cookies.update(cookies)
    assert anonymous.get("/", **credentials).status_code == 401


def test_the_printed_url_sets_a_strict_cookie_and_drops_the_token_from_the_address(
    anonymous: TestClient,
):
    first = anonymous.get("/session", params={"ns": "default", "id": "trip", "token": TOKEN})
    assert first.status_code == 303
    assert first.headers["location"] == "/session?ns=default&id=trip"
    cookie = first.headers["set-cookie"]
    assert f"smartsearch-ui-{PORT}={TOKEN}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = anonymous.get(first.headers["location"])
    assert page.status_code == 200 and "Casa do Rio" in page.text


@pytest.mark.parametrize("host", ["evil.example", "127.0.0.1:9999", "localhost.evil.example"])
def test_a_host_that_does_not_name_this_server_is_refused(client: TestClient, host: str):
    response = client.get("/", headers={"host": host})
    assert response.status_code == 421


def test_loopback_names_of_this_port_are_accepted(client: TestClient):
    for host in (f"localhost:{PORT}", f"127.0.0.1:{PORT}", f"LOCALHOST:{PORT}"):
        assert client.get("/", headers={"host": host}).status_code == 200


def test_a_request_from_another_origin_is_refused(client: TestClient):
    assert client.get("/", headers={"origin": "http://evil.example"}).status_code == 403
    refused = client.post(
        "/forget", json={"turn": 1}, headers={"origin": f"http://evil.example:{PORT}"}
    )
    assert refused.status_code == 403
    assert client.get("/session?ns=default&id=trip").status_code == 200  # nothing deleted
    assert "We fly to Lisbon" in client.get("/session?ns=default&id=trip").text


def test_a_change_needs_the_token_header_not_only_the_cookie(anonymous: TestClient):
    anonymous.cookies.set(f"smartsearch-ui-{PORT}", TOKEN)
    origin = {"origin": f"http://127.0.0.1:{PORT}"}
    assert anonymous.post("/forget", json={"turn": 1}, headers=origin).status_code == 403
    assert "We fly to Lisbon" in anonymous.get("/session?ns=default&id=trip").text


def test_a_change_without_origin_or_same_origin_fetch_metadata_is_refused(client: TestClient):
    assert client.post("/forget", json={"turn": 1}).status_code == 403
    cross = client.post("/forget", json={"turn": 1}, headers={"sec-fetch-site": "cross-site"})
    assert cross.status_code == 403
    same = client.post("/forget", json={"turn": 1}, headers={"sec-fetch-site": "same-origin"})
    assert same.status_code == 200


@pytest.mark.parametrize("path", ["/", "/search?q=Lisbon", "/static/ui.js", "/nope"])
def test_every_answer_carries_the_security_headers(client: TestClient, path: str):
    response = client.get(path)
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in CONTENT_SECURITY_POLICY
    assert "unsafe-inline" not in CONTENT_SECURITY_POLICY
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["cache-control"] == "no-store"


def test_refusals_carry_the_security_headers_too(anonymous: TestClient):
    response = anonymous.get("/")
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY


def test_a_weak_token_is_refused_at_start():
    with pytest.raises(ConfigError):
        ui_access("short", PORT)
    assert ui_access(TOKEN, PORT).allowed_hosts[:3] == (
        f"127.0.0.1:{PORT}",
        f"localhost:{PORT}",
        f"[::1]:{PORT}",
    )
