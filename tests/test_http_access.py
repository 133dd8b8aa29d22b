"""HTTP access control: the bind rule, bearer tokens, Host/Origin checks against DNS
rebinding, and the request size limit — the rules alone, then a real server and HTTP client."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from servers import INITIALIZE, http_server, run_cli, subprocess_env, write_lexical_config

from smartsearch_mcp.http_access import (
    http_access,
    is_loopback,
    start_notices,
    trusted_hosts,
)
from smartsearch_mcp.types import ConfigError

TOKEN = "t0k3n-for-tests-only-1234567890"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.20", False),
        ("example.com", False),
    ],
)
def test_only_loopback_addresses_count_as_local(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_binding_beyond_loopback_without_a_token_is_refused_saying_what_to_do() -> None:
    with pytest.raises(ConfigError, match=r"SMARTSEARCH_TOKEN.*--insecure"):
        http_access("0.0.0.0", None)


def test_binding_beyond_loopback_works_with_a_token_or_an_explicit_insecure() -> None:
    assert http_access("0.0.0.0", TOKEN).token == TOKEN
    assert http_access("192.168.1.20", None, insecure=True).token is None
    assert http_access("127.0.0.1", None, insecure=True).token is None


def test_loopback_without_a_token_gets_one_made_for_the_run_and_told_how_to_send_it() -> None:
    first, second = http_access("127.0.0.1", None), http_access("127.0.0.1", None)
    assert first.token_generated and first.token and len(first.token) >= 32
    assert first.token != second.token
    (notice,) = start_notices(first, 8765)
    assert f"Authorization: Bearer {first.token}" in notice and "SMARTSEARCH_TOKEN" in notice
    assert start_notices(http_access("127.0.0.1", TOKEN), 8765) == []


@pytest.mark.parametrize(
    ("token", "why"),
    [
        (" " * 20, "blank"),
        ("\t\n" * 10, "blank"),
        ("correct horse battery staple", "spaces"),
        ("t\u00f6ken-with-umlaut-1234", "non-ASCII"),
        ("short", "shorter than 16"),
    ],
)
def test_blank_spaced_or_short_tokens_are_refused_with_a_way_to_make_a_strong_one(
    token: str, why: str
) -> None:
    with pytest.raises(ConfigError, match=rf"{why}.*secrets\.token_urlsafe"):
        http_access("127.0.0.1", token)


def test_a_wildcard_bind_says_which_host_names_are_accepted_and_how_to_add_one() -> None:
    (notice,) = start_notices(http_access("0.0.0.0", TOKEN), 8765)
    assert "421" in notice and "--allowed-host NAME" in notice
    assert socket.gethostname().lower() in notice and "localhost" in notice


def test_trusted_hosts_are_loopback_names_the_bound_address_and_the_ones_given() -> None:
    assert trusted_hosts("127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert trusted_hosts("10.0.0.5", ["Memory.LAN"]) == [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "10.0.0.5",
        "memory.lan",
    ]
    assert socket.gethostname().lower() in trusted_hosts("0.0.0.0")


def test_the_serve_command_refuses_a_public_bind_without_a_token(tmp_path: Path) -> None:
    done = run_cli(
        ["serve", "--http", "--host", "0.0.0.0", "--db", str(tmp_path / "m.db")], timeout=60
    )
    assert done.returncode == 1
    assert "without a bearer token" in done.stderr and "--insecure" in done.stderr
    assert not (tmp_path / "m.db").exists()  # refused before anything was opened


@pytest.mark.anyio
@pytest.mark.slow
async def test_foreign_host_and_origin_headers_are_rejected_against_dns_rebinding(
    tmp_path: Path,
) -> None:
    config = write_lexical_config(tmp_path)
    async with (
        http_server(tmp_path / "m.db", config) as (base, _),
        httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http,
    ):
        with anyio.fail_after(60):
            rebinding = await http.post("/mcp", json=INITIALIZE, headers={"Host": "evil.com"})
            assert rebinding.status_code == 421
            foreign = await http.post(
                "/mcp", json=INITIALIZE, headers={"Origin": "http://evil.com"}
            )
            assert foreign.status_code == 403
            local = await http.post(
                "/mcp", json=INITIALIZE, headers={"Origin": "http://localhost:3000"}
            )
            assert local.status_code == 200, local.text


@pytest.mark.anyio
@pytest.mark.slow
async def test_request_bodies_over_the_limit_are_refused_with_413(tmp_path: Path) -> None:
    config = write_lexical_config(tmp_path)
    async with http_server(tmp_path / "m.db", config, "--max-request-mb", "1") as (base, _):
        big = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": "x" * (1024 * 1024 + 1)}},
        }
        async with httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http:
            with anyio.fail_after(60):
                response = await http.post("/mcp", content=json.dumps(big))
        assert response.status_code == 413


@pytest.mark.anyio
@pytest.mark.slow
async def test_with_a_token_only_clients_sending_it_are_served(tmp_path: Path) -> None:
    config = write_lexical_config(tmp_path)
    env = subprocess_env(SMARTSEARCH_TOKEN=TOKEN)
    async with http_server(tmp_path / "m.db", config, env=env) as (base, _):
        async with httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http:
            with anyio.fail_after(60):
                missing = await http.post("/mcp", json=INITIALIZE)
                wrong = await http.post(
                    "/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {TOKEN}x"}
                )
        assert missing.status_code == 401 and wrong.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")

        with anyio.fail_after(60):
            async with (
                create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as authed,
                Client(streamable_http_client(f"{base}/mcp", http_client=authed)) as client,
            ):
                stored = await client.call_tool("remember", {"text": "The gate code is 4711."})
                assert not stored.is_error, stored.content
                found = await client.call_tool("recall", {"query": "gate code"})
                assert "4711" in found.structured_content["passages"][0]["text"]


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_public_bind_with_a_token_serves_clients_that_send_it(tmp_path: Path) -> None:
    config = write_lexical_config(tmp_path)
    async with http_server(tmp_path / "m.db", config, "--host", "0.0.0.0", "--token", TOKEN) as (
        base,
        process,
    ):
        async with httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http:
            with anyio.fail_after(60):
                refused = await http.post("/mcp", json=INITIALIZE)
                served = await http.post(
                    "/mcp", json=INITIALIZE, headers={"Authorization": f"Bearer {TOKEN}"}
                )
        assert refused.status_code == 401
        assert served.status_code == 200, served.text
    assert process.stderr is not None
    started = process.stderr.read().decode()
    assert "bound to every interface" in started and "--allowed-host NAME" in started


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_bearer_scheme_and_the_host_name_are_matched_in_any_case(tmp_path: Path) -> None:
    config = write_lexical_config(tmp_path)
    async with http_server(tmp_path / "m.db", config, "--token", TOKEN) as (base, _):
        port = base.rsplit(":", 1)[1]
        async with httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http:
            with anyio.fail_after(60):
                lower = await http.post(
                    "/mcp", json=INITIALIZE, headers={"Authorization": f"bearer {TOKEN}"}
                )
                upper_host = await http.post(
                    "/mcp",
                    json=INITIALIZE,
                    headers={"Authorization": f"BEARER {TOKEN}", "Host": f"LocalHost:{port}"},
                )
                other_scheme = await http.post(
                    "/mcp", json=INITIALIZE, headers={"Authorization": f"Basic {TOKEN}"}
                )
        assert lower.status_code == 200, lower.text
        assert upper_host.status_code == 200, upper_host.text
        assert other_scheme.status_code == 401


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_loopback_server_without_a_token_makes_one_and_says_how_to_send_it(
    tmp_path: Path,
) -> None:
    config = write_lexical_config(tmp_path)
    log_path = tmp_path / "stderr.txt"
    with log_path.open("wb") as log:
        async with http_server(tmp_path / "m.db", config, stderr=log, insecure=False) as (
            base,
            _,
        ):
            match = re.search(r"Authorization: Bearer (\S+)'", log_path.read_text())
            assert match, log_path.read_text()
            async with httpx.AsyncClient(base_url=base, headers=MCP_HEADERS) as http:
                with anyio.fail_after(60):
                    anonymous = await http.post("/mcp", json=INITIALIZE)
                    authorized = await http.post(
                        "/mcp",
                        json=INITIALIZE,
                        headers={"Authorization": f"Bearer {match.group(1)}"},
                    )
    assert anonymous.status_code == 401
    assert authorized.status_code == 200, authorized.text
    # one plain line, as stdio's: where it serves, the database, config and namespace
    (started,) = [line for line in log_path.read_text().splitlines() if "serving MCP" in line]
    assert started.startswith("smartsearch-mcp ") and "WARNING" not in started
    assert f"{base}/mcp" in started and str(tmp_path / "m.db") in started
    assert ", config " in started and ", namespace " in started


def test_a_port_in_use_is_one_clear_error_before_anything_opens(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(
            ["serve", "--http", "--port", str(port), "--db", str(tmp_path / "m.db")], timeout=60
        )
    assert done.returncode == 1
    assert f"error: port {port} on 127.0.0.1 is already in use" in done.stderr
    assert "serving" not in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("port", ["99999", "0", "-1", "http"])
def test_a_port_outside_1_to_65535_is_a_usage_error(tmp_path: Path, port: str) -> None:
    done = run_cli(["serve", "--http", "--port", port, "--db", str(tmp_path / "m.db")], timeout=60)
    assert done.returncode == 2
    assert "is not a port number (1-65535)" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "m.db").exists()
