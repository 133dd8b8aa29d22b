"""The stdio server as a process: every line it cannot read gets an error reply (the SDK's
own transport left the client waiting), invalid UTF-8 is refused rather than stored as
U+FFFD, it says on stderr what it serves, and Ctrl-C or a closed stdin stop it at once —
also while models are still loading."""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from servers import (
    INITIALIZE,
    INITIALIZED,
    REPO,
    cli_command,
    subprocess_env,
    write_lexical_config,
)

from smartsearch_mcp.stdio_transport import INVALID_REQUEST, PARSE_ERROR, check_line

# Generous: a hang is what the timeouts catch, not slowness.
TIMEOUT = 60


def _remember_line(request_id: int, text_json: str) -> bytes:
    """A remember call whose text is `text_json`, already JSON-encoded (so escapes stay raw)."""
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":'
        f'{{"name":"remember","arguments":{{"text":{text_json}}}}}}}'
    ).encode()


def _bad_utf8(request_id: int) -> bytes:
    return _remember_line(request_id, '"x"').replace(b'"x"', b'"bad \xff\xfe bytes"')


def _nested(request_id: int, depth: int) -> bytes:
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"ping","params":{{"a":'
        + "[" * depth
        + "]" * depth
        + "}}"
    ).encode()


# ---------------------------------------------------------------- the line check


@pytest.mark.parametrize(
    ("raw", "expected_id", "code", "says"),
    [
        (_remember_line(7, '"cut \\ud83d emoji"'), 7, PARSE_ERROR, "surrogate"),
        (_bad_utf8(8), 8, PARSE_ERROR, "not valid UTF-8"),
        (_nested(9, 300), 9, PARSE_ERROR, "nested too deeply"),
        (b'{"jsonrpc":"2.0","id":10,"method":"tools/li', None, PARSE_ERROR, "not valid JSON"),
        (b"[1, 2]", None, INVALID_REQUEST, "not a JSON-RPC 2.0 message"),
        (b'{"jsonrpc":"2.0","id":11}', 11, INVALID_REQUEST, "not a JSON-RPC 2.0 message"),
    ],
)
def test_a_line_the_sdk_cannot_read_is_answered_with_the_id_when_readable(
    raw, expected_id, code, says
):
    problem = check_line(raw)
    assert problem is not None
    assert problem[0] == expected_id and problem[1] == code and says in problem[2]


def test_a_valid_message_passes_untouched():
    assert check_line(json.dumps(INITIALIZE).encode()) is None
    assert check_line(_remember_line(3, json.dumps("whole emoji 🐳 and ünïcode"))) is None


# ---------------------------------------------------------------- the process


class _Server:
    """`serve` over pipes; replies are read by a thread so a missing one times out."""

    def __init__(self, tmp_path: Path, config: Path) -> None:
        self.db = tmp_path / "memory.db"
        self.process = subprocess.Popen(
            cli_command("serve", "--db", str(self.db), "--config", str(config)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=subprocess_env(),
            cwd=str(REPO),
        )
        self.replies: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.replies.put(json.loads(line))

    def send(self, raw: bytes | dict[str, Any]) -> None:
        assert self.process.stdin is not None
        data = json.dumps(raw).encode() if isinstance(raw, dict) else raw
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        return self.replies.get(timeout=TIMEOUT)

    def start(self) -> None:
        self.send(INITIALIZE)
        assert self.reply()["id"] == 1
        self.send(INITIALIZED)

    def wait(self) -> tuple[int, str]:
        try:
            self.process.wait(timeout=TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
        assert self.process.stderr is not None
        return self.process.returncode, self.process.stderr.read().decode()


def test_unreadable_lines_get_error_replies_and_store_nothing(tmp_path):
    server = _Server(tmp_path, write_lexical_config(tmp_path))
    server.start()
    server.send(_remember_line(2, '"cut \\ud83d emoji"'))
    server.send(_bad_utf8(3))
    server.send(_nested(4, 300))
    server.send(b'{"jsonrpc":"2.0","id":5,"method":"tools/li')
    server.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
    replies = [server.reply() for _ in range(5)]
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [
        (2, PARSE_ERROR),
        (3, PARSE_ERROR),
        (4, PARSE_ERROR),
        (None, PARSE_ERROR),
        (6, None),
    ]
    assert "UTF-8" in replies[1]["error"]["message"]
    server.process.stdin.close()  # type: ignore[union-attr]
    status, _ = server.wait()
    assert status == 0
    with sqlite3.connect(server.db) as db:
        assert db.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 0


def test_the_server_says_what_it_serves_and_stops_on_the_first_ctrl_c(tmp_path):
    server = _Server(tmp_path, write_lexical_config(tmp_path))
    server.start()
    server.process.send_signal(signal.SIGINT)
    status, err = server.wait()
    assert status == 130
    (started,) = [line for line in err.splitlines() if "serving MCP over stdio" in line]
    assert (
        str(server.db) in started and ", namespace " in started
    )  # the namespace rule: project or default
    assert "Traceback" not in err


def _model_that_never_loads(tmp_path: Path) -> Path:
    """A bi-encoder directory whose files are FIFOs: loading it blocks for good, so the
    server is reliably 'still warming up'."""
    model = tmp_path / "blocking-model"
    model.mkdir()
    for name in ("modules.json", "config.json", "config_sentence_transformers.json"):
        os.mkfifo(model / name)
    config = tmp_path / "blocking.toml"
    config.write_text(
        f'[nlp]\nspacy_models = []\n[models]\nbi_encoder = "{model}"\n'
        '[rank]\nscorers = ["bi_encoder", "lexical"]\n'
    )
    return config


@pytest.mark.parametrize("stop", ["close-stdin", "sigint"])
@pytest.mark.parametrize("recall_waiting", [False, True], ids=["idle", "recall-waiting"])
def test_the_server_stops_while_models_are_still_loading(tmp_path, stop, recall_waiting):
    server = _Server(tmp_path, _model_that_never_loads(tmp_path))
    server.start()
    if recall_waiting:  # a request stuck behind the model load
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "recall", "arguments": {"query": "whale"}},
            }
        )
    if stop == "sigint":
        server.process.send_signal(signal.SIGINT)
    else:
        server.process.stdin.close()  # type: ignore[union-attr]
    status, err = server.wait()
    assert status == (130 if stop == "sigint" else 0), err
