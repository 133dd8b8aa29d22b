"""A running server answers the command line's recalls warm, through a private Unix socket
(smartsearch_mcp.recall_socket): the same answer as a local recall, only when its settings
are the CLI's, never through a socket or directory that is not this user's, and a dead
server's socket is only a fallback to the local recall."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from servers import REPO, cli_command, run_cli, subprocess_env, write_lexical_config

from smartsearch_mcp.capture import HookEvent, parse_event, session_key
from smartsearch_mcp.config import Config
from smartsearch_mcp.dates import format_timestamp
from smartsearch_mcp.inject import choose_injection, injection_from_json, recalled_passages
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.recall_socket import (
    RUNTIME_ENV,
    _receive_line,
    capture_on_server,
    config_fingerprint,
    runtime_dir,
    serve_recalls,
    socket_path,
)
from smartsearch_mcp.tokens import get_token_counter
from smartsearch_mcp.types import TurnInput

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no Unix sockets")

TIMEOUT = 120
ANSWERED = "answered by the server already running on this database"
QUERY = "When does Ann fly to Lisbon?"


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "run"
    monkeypatch.setenv(RUNTIME_ENV, str(directory))
    return directory


def _env(runtime: Path) -> dict[str, str]:
    return subprocess_env(**{RUNTIME_ENV: str(runtime), "SMARTSEARCH_NAMESPACE": "default"})


def _remember(db: Path, config: Path, runtime: Path) -> None:
    for text, speaker in [
        ("We fly to Lisbon on 3 June.", "Ann"),
        ("The dog stays with my sister.", "Bo"),
    ]:
        done = run_cli(
            ["remember", text, "--speaker", speaker, "--db", str(db), "--config", str(config)],
            env=_env(runtime),
            timeout=TIMEOUT,
        )
        assert done.returncode == 0, done.stderr


def _recall(db: Path, config: Path, runtime: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    done = run_cli(
        ["recall", QUERY, "--db", str(db), "--config", str(config), *extra],
        env=_env(runtime),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return done


@contextmanager
def _server(db: Path, config: Path, runtime: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A stdio server on `db` (its stdin kept open), once its socket answers."""
    process = subprocess.Popen(
        cli_command("serve", "--db", str(db), "--config", str(config)),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(runtime),
        cwd=str(REPO),
    )
    try:
        _wait_until_answering(db, process)
        yield process
    finally:
        assert process.stdin is not None and process.stderr is not None
        process.stdin.close()  # the client went away: the server stops
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        process.stderr.close()


def _wait_until_answering(db: Path, process: subprocess.Popen[bytes]) -> None:
    path = socket_path(db, create_dir=True)
    assert path is not None

    async def wait() -> None:
        with anyio.fail_after(TIMEOUT):
            while True:
                assert process.poll() is None, "the server exited"
                try:
                    stream = await anyio.connect_unix(path)
                except OSError:
                    await anyio.sleep(0.1)
                    continue
                await stream.aclose()
                return

    anyio.run(wait)


def test_a_running_server_answers_the_cli_recall_as_a_local_recall_would(tmp_path, runtime):
    db, config = tmp_path / "memory.db", write_lexical_config(tmp_path)
    _remember(db, config, runtime)
    local = _recall(db, config, runtime)
    local_json = _recall(db, config, runtime, "--json")
    assert ANSWERED not in local.stderr

    with _server(db, config, runtime) as server:
        warm = _recall(db, config, runtime)
        warm_json = _recall(db, config, runtime, "--json")
        forced_local = _recall(db, config, runtime, "--local")

    assert f"{ANSWERED} (pid {server.pid})" in warm.stderr
    assert warm.stdout == local.stdout and "Lisbon" in warm.stdout
    assert json.loads(warm_json.stdout) == json.loads(local_json.stdout)
    assert ANSWERED not in forced_local.stderr and forced_local.stdout == local.stdout
    path = socket_path(db)
    assert path is not None and not path.exists(), "a server that stopped left its socket"


def test_a_server_with_other_settings_does_not_answer(tmp_path, runtime):
    db, config = tmp_path / "memory.db", write_lexical_config(tmp_path)
    other = tmp_path / "other.toml"
    other.write_text(config.read_text() + "[truncation]\nmax_tokens = 700\n")
    _remember(db, config, runtime)
    with _server(db, config, runtime):
        done = _recall(db, other, runtime)
    assert ANSWERED not in done.stderr and "Lisbon" in done.stdout


def test_a_killed_servers_socket_falls_back_and_the_next_server_takes_it_over(tmp_path, runtime):
    db, config = tmp_path / "memory.db", write_lexical_config(tmp_path)
    _remember(db, config, runtime)
    with _server(db, config, runtime) as first:
        first.kill()
        first.wait(timeout=30)
    path = socket_path(db)
    assert path is not None and path.exists(), "SIGKILL leaves the socket behind"

    done = _recall(db, config, runtime)
    assert ANSWERED not in done.stderr and "Lisbon" in done.stdout

    with _server(db, config, runtime) as second:
        done = _recall(db, config, runtime)
    assert f"(pid {second.pid})" in done.stderr


def test_the_first_server_on_a_database_keeps_answering(tmp_path, runtime):
    db, config = tmp_path / "memory.db", write_lexical_config(tmp_path)
    _remember(db, config, runtime)
    with _server(db, config, runtime) as first:
        second = subprocess.Popen(
            cli_command("serve", "--db", str(db), "--config", str(config)),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=_env(runtime),
        )
        try:
            done = run_cli(
                ["remember", "a note", "--db", str(db), "--config", str(config)],
                env=_env(runtime),
                timeout=TIMEOUT,
            )  # by now the second server has had time to start
            assert done.returncode == 0
            done = _recall(db, config, runtime)
        finally:
            second.kill()
            second.wait(timeout=30)
            assert second.stdin is not None
            second.stdin.close()
        assert f"(pid {first.pid})" in done.stderr
        # The second server's exit removed nothing of the first's.
        assert f"(pid {first.pid})" in _recall(db, config, runtime).stderr


def test_a_runtime_directory_open_to_others_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setenv(RUNTIME_ENV, str(shared))
    assert runtime_dir() is None
    assert socket_path(tmp_path / "memory.db") is None
    private = tmp_path / "private"
    monkeypatch.setenv(RUNTIME_ENV, str(private))
    assert runtime_dir() is None  # missing, not created
    assert runtime_dir(create=True) == private
    assert private.stat().st_mode & 0o777 == 0o700
    # a directory given outright is held to the same rules and wins over the environment
    assert socket_path(tmp_path / "memory.db", runtime=shared) is None
    other = tmp_path / "other"
    other.mkdir(mode=0o700)
    path = socket_path(tmp_path / "memory.db", runtime=other)
    assert path is not None and path.parent == other


def _exchange(path: Path, payload: bytes) -> dict[str, object]:
    return _exchange_in_parts(path, [payload], 0.0)


@asynccontextmanager
async def _serving(
    memory: Memory, db: Path, config: Config
) -> AsyncIterator[tuple[anyio.abc.TaskGroup, Path]]:
    """`serve_recalls` running on `db` in a task group, once its socket is there; cancel
    the group to stop it."""
    async with anyio.create_task_group() as group:
        group.start_soon(serve_recalls, memory, db, config)
        path = socket_path(db, create_dir=True)
        assert path is not None
        with anyio.fail_after(30):
            while not path.exists():
                await anyio.sleep(0.05)
        yield group, path


@pytest.mark.anyio
async def test_bad_requests_get_an_error_and_the_server_goes_on(tmp_path, runtime):
    config = Config.load(write_lexical_config(tmp_path))
    db = tmp_path / "memory.db"
    memory = await Memory.open(config, db, "default")
    try:
        await memory.remember([TurnInput(text="We fly to Lisbon on 3 June.", speaker="Ann")])
        async with _serving(memory, db, config) as (group, path):
            assert path.stat().st_mode & 0o777 == 0o600

            def ask(payload: bytes) -> dict[str, object]:
                return _exchange(path, payload)

            good = {"op": "recall", "config": config_fingerprint(config), "query": QUERY}
            replies = [
                await anyio.to_thread.run_sync(ask, b"not json\n"),
                await anyio.to_thread.run_sync(ask, b'{"op": "delete"}\n'),
                await anyio.to_thread.run_sync(
                    ask, json.dumps({**good, "query": 5}).encode() + b"\n"
                ),
                await anyio.to_thread.run_sync(
                    ask, json.dumps({**good, "config": "another"}).encode() + b"\n"
                ),
                await anyio.to_thread.run_sync(
                    ask, json.dumps({**good, "since": "someday"}).encode() + b"\n"
                ),
                await anyio.to_thread.run_sync(ask, json.dumps(good).encode() + b"\n"),
            ]
            group.cancel_scope.cancel()
    finally:
        await memory.close()
    bad_json, bad_op, bad_query, other_config, bad_date, answered = replies
    for reply in (bad_json, bad_op, bad_query):
        assert reply["ok"] is False and str(reply["error"]).startswith("bad request")
    assert other_config == {"ok": False, "other_config": True}
    assert bad_date["ok"] is False and "someday" in str(bad_date["error"])
    assert answered["ok"] is True and "Lisbon" in str(answered["text"])
    assert answered["pid"] == os.getpid()
    assert not path.exists()


def test_a_recall_error_from_the_server_reads_as_the_local_one(tmp_path, runtime):
    db, config = tmp_path / "memory.db", write_lexical_config(tmp_path)
    _remember(db, config, runtime)
    args = ["recall", QUERY, "--db", str(db), "--config", str(config), "--since", "someday"]
    local = run_cli(args, env=_env(runtime), timeout=TIMEOUT)
    with _server(db, config, runtime):
        warm = run_cli(args, env=_env(runtime), timeout=TIMEOUT)
    assert local.returncode == warm.returncode != 0
    assert local.stderr.strip().splitlines()[-1] == warm.stderr.strip().splitlines()[-1]


_RACER = """
import sys, time
from pathlib import Path
import anyio
from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.recall_socket import serve_recalls

config_path, db, go = sys.argv[1:4]

async def main():
    config = Config.load(config_path)
    memory = await Memory.open(config, ":memory:", "default")
    try:
        while not Path(go).exists():
            time.sleep(0.001)
        await serve_recalls(memory, db, config)
    finally:
        await memory.close()

anyio.run(main)
"""


def test_servers_starting_at_once_on_one_database_leave_one_listening_and_none_fails(
    tmp_path, runtime
):
    # Eight server processes on one database (a shared PostgreSQL one, say) start together:
    # one takes the socket, the others return; none unlinks another's socket or raises (a
    # raise there takes its whole server down).
    config = write_lexical_config(tmp_path)
    db = tmp_path / "memory.db"
    go = tmp_path / "go"
    env = {**subprocess_env(), RUNTIME_ENV: str(runtime)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(config), str(db), str(go)],
            env=env,
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    try:
        time.sleep(3)  # imports done
        path = socket_path(db, create_dir=True)
        go.touch()
        assert path is not None
        deadline = time.monotonic() + 60
        while sum(r.poll() is not None for r in racers) < 7 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        running = [r for r in racers if r.poll() is None]
        assert len(running) == 1
        assert all(r.returncode == 0 for r in racers if r is not running[0])
        reply = _exchange(
            path, json.dumps({"op": "recall", "config": "x", "query": QUERY}).encode() + b"\n"
        )
        assert reply == {"ok": False, "other_config": True}
    finally:
        for r in racers:
            r.kill()
        errors = "".join(r.communicate()[1] for r in racers)
    assert "Traceback" not in errors, errors


@pytest.mark.anyio
async def test_a_stale_socket_file_is_replaced(tmp_path, runtime):
    config = Config.load(write_lexical_config(tmp_path))
    db = tmp_path / "memory.db"
    memory = await Memory.open(config, db, "default")
    path = socket_path(db, create_dir=True)
    assert path is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))  # bound, never listening: what a killed server leaves
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(serve_recalls, memory, db, config)
            good = {"op": "recall", "config": config_fingerprint(config), "query": QUERY}
            with anyio.fail_after(30):
                while True:
                    try:
                        reply = await anyio.to_thread.run_sync(
                            _exchange, path, json.dumps(good).encode() + b"\n"
                        )
                        break
                    except OSError:
                        await anyio.sleep(0.05)
            assert reply["ok"] is True
            group.cancel_scope.cancel()
    finally:
        await memory.close()


def _exchange_in_parts(path: Path, parts: list[bytes], pause: float) -> dict[str, object]:
    """`_exchange`, the request sent in `parts` with `pause` seconds between them."""
    import time

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(path))
        for part in parts:
            sock.sendall(part)
            time.sleep(pause)
        return json.loads(_receive_line(sock.recv))  # type: ignore[no-any-return]


@pytest.mark.anyio
async def test_a_request_too_long_gets_its_error_while_still_being_sent(
    tmp_path, runtime, monkeypatch
):
    """The server reads past its bound before it replies: a client still sending the rest of
    an over-long line gets the error, not a broken pipe (before, the connection was closed
    under it), and one longer than it reads at all gets it at once, not at the request's
    timeout."""
    from smartsearch_mcp import recall_socket

    config = Config.load(write_lexical_config(tmp_path))
    db = tmp_path / "memory.db"
    memory = await Memory.open(config, db, "default")
    try:
        async with _serving(memory, db, config) as (group, path):
            half = b"[" * recall_socket.MAX_REQUEST
            parts = [half, half, half + b"\n"]
            reply = await anyio.to_thread.run_sync(_exchange_in_parts, path, parts, 0.3)
            good = {"op": "recall", "config": config_fingerprint(config), "query": QUERY}
            after = await anyio.to_thread.run_sync(
                _exchange, path, json.dumps(good).encode() + b"\n"
            )
            monkeypatch.setattr(recall_socket, "MAX_DRAINED", 10_000)
            endless = [b"[" * (recall_socket.MAX_REQUEST + 1), b"[" * 20_000]
            with anyio.fail_after(recall_socket.REQUEST_TIMEOUT_S / 2):
                cut = await anyio.to_thread.run_sync(_exchange_in_parts, path, endless, 0.3)
            group.cancel_scope.cancel()
    finally:
        await memory.close()
    assert reply["ok"] is False and "over" in str(reply["error"])
    assert after["ok"] is True
    assert cut["ok"] is False and "over" in str(cut["error"])  # not a timeout


@pytest.mark.anyio
async def test_hostile_clients_cannot_end_the_server(tmp_path, runtime, monkeypatch):
    """Deep nesting, a recall out of memory, the process out of descriptors and more idle
    connections than are answered: each gets an error or a closed connection, and the
    next good request is answered (before, each of these ended the MCP server)."""
    import errno

    from smartsearch_mcp import recall_socket

    config = Config.load(write_lexical_config(tmp_path))
    db = tmp_path / "memory.db"
    memory = await Memory.open(config, db, "default")
    good = json.dumps({"op": "recall", "config": config_fingerprint(config), "query": QUERY})
    recall = memory.recall

    async def out_of_memory(query: str, **options: object) -> object:
        if query == "exhaust":
            raise MemoryError
        return await recall(query, **options)

    monkeypatch.setattr(memory, "recall", out_of_memory)
    failures = [OSError(errno.EMFILE, "Too many open files")]

    async def accept_once_out_of_descriptors(self: Any) -> Any:
        if failures:
            raise failures.pop()
        return await accept(self)

    monkeypatch.setattr(recall_socket, "ACCEPT_RETRY_S", 0.01)
    try:
        await memory.remember([TurnInput(text="We fly to Lisbon on 3 June.", speaker="Ann")])
        async with anyio.create_task_group() as group:
            path = socket_path(db, create_dir=True)
            assert path is not None
            async with await anyio.create_unix_listener(tmp_path / "probe.sock") as probe:
                listener_type = type(probe)
            accept = listener_type.accept
            monkeypatch.setattr(listener_type, "accept", accept_once_out_of_descriptors)
            group.start_soon(serve_recalls, memory, db, config)
            with anyio.fail_after(30):
                while not path.exists():
                    await anyio.sleep(0.05)

            def ask(payload: bytes) -> dict[str, object]:
                return _exchange(path, payload)

            nested = await anyio.to_thread.run_sync(ask, b"[" * 50_000 + b"\n")
            too_long = await anyio.to_thread.run_sync(ask, b"[" * 200_000 + b"\n")
            exhausted = await anyio.to_thread.run_sync(
                ask, good.replace(QUERY, "exhaust").encode() + b"\n"
            )
            idle = []
            for _ in range(recall_socket.MAX_CONNECTIONS + 20):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(path))
                idle.append(sock)
            with anyio.fail_after(30):  # the ones over the bound are closed at once
                closed = await anyio.to_thread.run_sync(lambda: idle[-1].recv(1))
            for sock in idle:
                sock.close()
            with anyio.fail_after(30):
                while True:  # the idle ones' slots come back as they close
                    try:
                        answered = await anyio.to_thread.run_sync(ask, good.encode() + b"\n")
                        break
                    except ValueError:
                        await anyio.sleep(0.1)
            group.cancel_scope.cancel()
    finally:
        await memory.close()
    assert not failures  # accept did fail once, and serving went on
    assert nested["ok"] is False and "RecursionError" in str(nested["error"])
    assert too_long["ok"] is False and "over" in str(too_long["error"])
    assert exhausted == {"ok": False, "error": "the server ran out of memory for this recall"}
    assert closed == b""
    assert answered["ok"] is True and "Lisbon" in str(answered["text"])


# ---------------------------------------------------------------------- the prompt hook's capture


UNTIL = "2100-01-01T00:00:00Z"


def _prompt_event(session: str, prompt: str) -> HookEvent:
    return parse_event(
        "claude-code", "user-prompt", json.dumps({"session_id": session, "prompt": prompt})
    )


@pytest.mark.anyio
async def test_a_running_server_stores_a_prompt_once_then_says_what_to_inject(tmp_path, runtime):
    config = Config.load(write_lexical_config(tmp_path))
    db = tmp_path / "memory.db"
    memory = await Memory.open(config, db, "proj")
    prompt = "When do we fly to Lisbon? I need to book the airport taxi."
    try:
        past = [
            "We fly to Lisbon on 3 June, early morning.",
            "The dog stays with my sister while we are away.",
            "Remind me to renew the car insurance in July.",
            "The new sofa arrives on Friday afternoon.",
        ]
        dated = [TurnInput(t, "Ann", "user", "2026-11-25T20:30:00") for t in past]
        await memory.remember(dated, session_id="past")
        until = format_timestamp(datetime.now(UTC))  # the hook began: its prompt comes later
        async with _serving(memory, db, config) as (group, _):

            def capture(event: HookEvent, inject: bool = True, cfg: Config = config) -> Any:
                return capture_on_server(db, cfg, event, "proj", until, inject, 30)

            now = _prompt_event("now", prompt)
            first = await anyio.to_thread.run_sync(capture, now)
            again = await anyio.to_thread.run_sync(capture, now)
            quiet = await anyio.to_thread.run_sync(
                lambda: capture(_prompt_event("later", "Nothing to see"), False)
            )
            other = await anyio.to_thread.run_sync(
                lambda: capture(
                    _prompt_event("other", "not stored here"),
                    cfg=config.with_overrides(truncation={"max_tokens": 999}),
                )
            )
            group.cancel_scope.cancel()
        stored = [t.text for t in await memory.store.session_turns("proj", session_key(now))]
        local = choose_injection(
            recalled_passages(await memory.recall(prompt, namespace="proj", until=until)),
            prompt,
            "proj",
            session_key(now),
            config.inject,
            lambda: get_token_counter(config.truncation.tokenizer),
        )
    finally:
        await memory.close()
    assert (first.stored, again.stored, quiet.stored) == (1, 0, 1)
    assert stored == [prompt]  # stored once, as the hook stores it
    injected = injection_from_json(first.injection, "server")
    assert injected is not None and injected.reason == "injected"
    assert "3 June" in injected.text and prompt not in injected.text
    assert injected.text == local.text  # the choice the hook's own code makes
    assert quiet.injection is None
    assert other is None  # another configuration: the hook stores the prompt itself


@pytest.mark.anyio
async def test_a_capture_the_server_cannot_take_stores_nothing_and_says_so(tmp_path, runtime):
    config = Config.load(write_lexical_config(tmp_path))
    db = tmp_path / "memory.db"
    memory = await Memory.open(config, db, "proj")
    good = {
        "op": "capture",
        "config": config_fingerprint(config),
        "event": dataclasses.asdict(_prompt_event("now", "When is the flight?")),
        "namespace": "proj",
        "until": UNTIL,
        "inject": None,
    }
    bad = [
        {**good, "event": {**good["event"], "client": "vim"}},
        {**good, "event": {**good["event"], "prompt": 5}},
        {**good, "event": {"session_id": "now"}},
        {**good, "namespace": None},
        {**good, "inject": {"min_confidence": 7}},
        {**good, "inject": "yes"},
    ]
    try:
        async with _serving(memory, db, config) as (group, path):
            replies = [
                await anyio.to_thread.run_sync(
                    _exchange, path, json.dumps(request).encode() + b"\n"
                )
                for request in bad
            ]
            group.cancel_scope.cancel()
        assert (await memory.store.stats()).turns == 0
    finally:
        await memory.close()
    for reply in replies:
        assert reply["ok"] is False and str(reply["error"]).startswith("bad request"), reply
