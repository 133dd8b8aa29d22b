"""The database file as the user's disk presents it: not SQLite, truncated, corrupt, another
application's, unwritable. Every command ends with one clear line naming the file (hooks:
exit 0 and a line in hooks.log), nothing is changed, and new files are private.

Each command runs as a subprocess with a timeout: a failure to open once left aiosqlite's
non-daemon thread running, and the process never exited."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from servers import (
    INITIALIZE,
    REPO,
    cli_command,
    run_cli,
    subprocess_env,
    write_lexical_config,
)

from smartsearch_mcp.store import SQLiteStore
from smartsearch_mcp.store.files import APPLICATION_ID
from smartsearch_mcp.types import TurnInput

# Generous: these commands take a second or two; a hang is what the timeout catches.
TIMEOUT = 120
ROOT = os.geteuid() == 0


def _cli(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    config = write_lexical_config(tmp_path)
    return run_cli(
        [*args, "--config", str(config), "--namespace", "default"],
        env=subprocess_env(SMARTSEARCH_CONFIG=str(config)),
        input=stdin,
        timeout=TIMEOUT,
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stored_database(path: Path, turns: int = 40) -> None:
    async def fill() -> None:
        store = await SQLiteStore.open(path)
        try:
            for i in range(turns):
                text = f"note {i} about the blue whale " + "plankton krill ocean " * 150
                await store.remember("default", f"s{i}", [TurnInput(text=text)])
        finally:
            await store.close()

    anyio.run(fill)


def _corrupt_turns_pages(path: Path) -> None:
    """Overwrite the pages of the turns table (not its root) with garbage."""
    with sqlite3.connect(path) as db:
        pages = [
            row[0]
            for row in db.execute("SELECT pageno FROM dbstat WHERE name = 'turns' ORDER BY pageno")
        ]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    assert len(pages) > 4
    with path.open("r+b") as handle:
        for page in pages[1:]:
            handle.seek((page - 1) * page_size)
            handle.write(b"\xab" * page_size)


HOOK_PAYLOAD = json.dumps(
    {"session_id": "s1", "prompt": "remember the blue whale", "cwd": str(REPO)}
)


# ---------------------------------------------------------------- cannot be opened


@pytest.mark.parametrize("command", [["stats"], ["remember", "a note"], ["grep", "whale"]])
def test_a_text_file_as_db_is_refused_in_one_line_and_left_unchanged(tmp_path, command):
    db = tmp_path / "notes.txt"
    db.write_text("my shopping list\n")
    done = _cli(tmp_path, *command, "--db", str(db))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()], done.stderr
    assert str(db) in done.stderr and "not an SQLite database" in done.stderr
    assert "Traceback" not in done.stderr
    assert db.read_text() == "my shopping list\n"
    assert not Path(f"{db}-wal").exists()


@pytest.mark.parametrize("command", [["stats"], ["remember", "a note"], ["recall", "whale"]])
def test_a_truncated_database_is_named_with_the_fix(tmp_path, command):
    db = tmp_path / "memory.db"
    _stored_database(db)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    done = _cli(tmp_path, *command, "--db", str(db))
    assert done.returncode == 1
    assert f"the database file {db} is corrupt" in done.stderr and "restore" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(lambda tmp: tmp / "a-file" / "memory.db", id="parent-is-a-file"),
        pytest.param(lambda tmp: Path("/proc/smartsearch-test/memory.db"), id="in-proc"),
    ],
)
def test_a_database_that_cannot_be_created_fails_for_root_too(tmp_path, where):
    (tmp_path / "a-file").write_text("x")
    db = where(tmp_path)
    done = _cli(tmp_path, "remember", "a note", "--db", str(db))
    assert done.returncode == 1
    assert str(db) in done.stderr and "--db" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(ROOT, reason="root writes through permissions: covered by the cases above")
def test_a_directory_without_write_permission_is_a_clear_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        done = _cli(tmp_path, "remember", "a note", "--db", str(locked / "memory.db"))
    finally:
        locked.chmod(0o755)
    assert done.returncode == 1 and "locked" in done.stderr and "Traceback" not in done.stderr


def test_read_only_commands_do_not_create_a_missing_database(tmp_path):
    """Nor does forget: deleting from a mistyped --db says so instead of making a memory."""
    db = tmp_path / "new" / "memory.db"
    commands = (
        ["stats"],
        ["recall", "whale"],
        ["grep", "whale"],
        ["timeline"],
        ["export", "-o", str(tmp_path / "out.jsonl")],
        ["forget", "--id", "3"],
        ["forget", "--all", "--yes"],
    )
    for command in commands:
        done = _cli(tmp_path, *command, "--db", str(db))
        assert done.returncode == 1, done
        assert f"no database at {db}" in done.stderr
    assert not db.parent.exists()


def test_a_hook_with_a_bad_database_exits_0_and_logs_one_line(tmp_path):
    db = tmp_path / "memory.db"
    db.write_text("not a database")
    done = subprocess.run(
        cli_command("hook", "claude-code", "user-prompt", "--db", str(db)),
        input=HOOK_PAYLOAD,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0 and done.stdout == ""
    log = (tmp_path / "hooks.log").read_text()
    assert "not an SQLite database" in log and "Traceback" not in log


def test_serve_over_stdio_with_a_bad_database_exits_instead_of_leaving_the_client_waiting(
    tmp_path,
):
    db = tmp_path / "memory.db"
    db.write_text("not a database")
    process = subprocess.Popen(
        cli_command("serve", "--db", str(db), "--config", str(write_lexical_config(tmp_path))),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=subprocess_env(),
        text=True,
    )
    try:
        _, err = process.communicate(json.dumps(INITIALIZE) + "\n", timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1
    assert "not an SQLite database" in err and str(db) in err and "Traceback" not in err


# ---------------------------------------------------------------- corrupt


def test_a_corrupt_database_is_reported_not_answered_from(tmp_path):
    db = tmp_path / "memory.db"
    _stored_database(db)
    _corrupt_turns_pages(db)
    for command in (["grep", "whale"], ["remember", "a new note"], ["timeline"]):
        done = _cli(tmp_path, *command, "--db", str(db))
        assert done.returncode == 1, (command, done.stdout)
        assert f"the database file {db} is corrupt" in done.stderr, (command, done.stderr)
        assert "doctor" in done.stderr and "Traceback" not in done.stderr
    doctor = _cli(tmp_path, "doctor", "--skip-models", "--db", str(db))
    assert doctor.returncode == 1
    assert "database: PROBLEMS" in doctor.stdout and "Traceback" not in doctor.stderr


def test_doctor_checks_the_full_text_index_without_writing(tmp_path):
    db = tmp_path / "memory.db"
    _stored_database(db, turns=5)

    async def check() -> list[str]:
        # A read-only connection: any write the check tried would fail here.
        store = await SQLiteStore.open(db, read_only=True)
        try:
            assert store.read_only
            return await store.integrity_check()
        finally:
            await store.close()

    assert anyio.run(check) == []
    with sqlite3.connect(db) as raw:  # the index loses a row the turns still have
        raw.execute(
            "INSERT INTO turns_fts(turns_fts, rowid, text, speaker) "
            "SELECT 'delete', id, text, speaker FROM turns WHERE id = 2"
        )
    problems = anyio.run(check)
    assert problems and "full-text index" in problems[0]
    doctor = _cli(tmp_path, "doctor", "--skip-models", "--db", str(db))
    assert doctor.returncode == 1 and "full-text index" in doctor.stdout


# ---------------------------------------------------------------- foreign


def test_another_applications_database_is_refused_untouched(tmp_path):
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as other:
        other.execute("CREATE TABLE contacts (name TEXT)")
        other.execute("INSERT INTO contacts VALUES ('Ann')")
    other.close()
    before = _digest(db)
    for command in (["remember", "a note"], ["stats"]):
        done = _cli(tmp_path, *command, "--db", str(db))
        assert done.returncode == 1
        assert f"{db} belongs to another application" in done.stderr
    assert _digest(db) == before
    with sqlite3.connect(db) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_databases_are_marked_as_ours_new_and_old(tmp_path):
    db = tmp_path / "memory.db"
    _stored_database(db, turns=1)
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        raw.execute("PRAGMA application_id = 0")  # as databases made before the mark
    _stored_database(db, turns=2)
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        # note 0 was stored already: one turn more
        assert raw.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 2


# ---------------------------------------------------------------- permissions


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_directories_and_files_are_private(tmp_path):
    data_home = tmp_path / "data"
    config = write_lexical_config(tmp_path)
    env = subprocess_env(XDG_DATA_HOME=str(data_home), SMARTSEARCH_CONFIG=str(config))
    env.pop("SMARTSEARCH_DB", None)
    done = run_cli(["remember", "a note", "--namespace", "default"], env=env, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    (db,) = data_home.glob("*/memory.db")
    assert _mode(db.parent) == 0o700 and _mode(db) == 0o600
    nested = tmp_path / "chosen" / "deeper" / "memory.db"
    assert (
        run_cli(["remember", "a note", "--db", str(nested)], env=env, timeout=TIMEOUT).returncode
        == 0
    )
    assert _mode(nested.parent) == 0o700 and _mode(nested) == 0o600
    assert _mode(nested.parent.parent) == 0o700  # the parents made for it too
    hook = subprocess.run(
        cli_command("hook", "claude-code", "user-prompt", "--db", str(nested)),
        input=HOOK_PAYLOAD,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    assert hook.returncode == 0
    assert _mode(nested.parent / "hooks.log") == 0o600


def test_an_existing_directory_is_left_alone_and_an_open_database_is_tightened(tmp_path):
    chosen = tmp_path / "shared"
    chosen.mkdir(mode=0o755)
    chosen.chmod(0o755)
    db = chosen / "memory.db"
    _stored_database(db, turns=1)
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.touch()
        path.chmod(0o644)
    done = _cli(tmp_path, "remember", "another note", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert _mode(chosen) == 0o755
    assert _mode(db) == 0o600  # -wal and -shm are gone after a clean close; the log says
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        assert f"{path} was readable by other users (mode 644); made it private" in done.stderr


# ---------------------------------------------------------------- logs


def test_debug_logging_never_shows_memory_text(tmp_path):
    db = tmp_path / "memory.db"
    secret = "zebra-secret-4711"
    done = _cli(tmp_path, "remember", f"my {secret} note", "--db", str(db), "--log-level", "debug")
    assert done.returncode == 0, done.stderr
    assert "DEBUG" in done.stderr  # debug logging was on
    assert secret not in done.stderr
    done = _cli(tmp_path, "grep", secret, "--db", str(db), "--log-level", "debug")
    assert secret in done.stdout and secret not in done.stderr


def test_a_tool_on_a_corrupt_database_answers_with_the_clear_error(tmp_path):
    from mcp import Client

    from smartsearch_mcp.config import Config
    from smartsearch_mcp.server import create_server

    db = tmp_path / "memory.db"
    _stored_database(db)
    _corrupt_turns_pages(db)
    config = Config.load(str(write_lexical_config(tmp_path)))

    async def call() -> Any:
        async with Client(create_server(config, db)) as client:
            return await client.call_tool("grep", {"pattern": "whale", "namespace": "default"})

    result = anyio.run(call)
    assert result.is_error
    assert f"the database file {db} is corrupt" in result.content[0].text


# ---------------------------------------------------------------- two stores in one process


def _count_in_another_process(db: Path) -> int:
    """Open, count the turns and close, in a process of its own (its close checkpoints and
    removes the write-ahead log when it believes no one else has the database open)."""
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(sys.argv[1])\n"
        "print(db.execute('SELECT COUNT(*) FROM turns').fetchone()[0])\n"
        "db.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(db)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    return int(done.stdout)


@pytest.mark.anyio
async def test_opening_a_second_store_keeps_the_first_ones_locks(tmp_path):
    """Closing any descriptor of a file drops every POSIX lock the process holds on it. A
    store that read the database header through a handle of its own made the process's
    other connections lockless: another process then deleted the write-ahead log they still
    wrote to, and their acknowledged turns were lost (found by the server-crash test)."""
    db = tmp_path / "memory.db"
    first = await SQLiteStore.open(db)
    try:
        await first.remember("default", "s1", [TurnInput(text="the first note")])
        second = await SQLiteStore.open(db)
        await second.close()
        assert _count_in_another_process(db) == 1
        assert Path(f"{db}-wal").exists(), "the log in use was removed by another process"
        await first.remember("default", "s1", [TurnInput(text="the second note")])
        assert _count_in_another_process(db) == 2
    finally:
        await first.close()


def test_a_database_that_cannot_be_created_leaves_no_empty_file(tmp_path, monkeypatch):
    from smartsearch_mcp.store import sqlite as module

    async def full_disk(*_: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(module, "connect", full_disk)  # SQLite cannot write its header
    db = tmp_path / "memory.db"
    with pytest.raises(Exception, match="full"):
        anyio.run(SQLiteStore.open, db)
    assert not db.exists()


def test_the_hook_exits_0_on_a_full_disk_and_a_cwd_it_cannot_read(tmp_path, monkeypatch):
    import logging

    from smartsearch_mcp.cli import main

    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(write_lexical_config(tmp_path)))
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    payload = json.loads(HOOK_PAYLOAD)
    payload["cwd"] = str(loop / "x")
    monkeypatch.setattr(sys, "stdin", _Stdin(json.dumps(payload).encode()))
    assert main(["hook", "claude-code", "user-prompt", "--no-inject"]) == 0
    turns = anyio.run(_texts, tmp_path / "memory.db")
    assert turns == [payload["prompt"]]  # stored, in the default namespace

    def full(self: logging.Handler, *_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(logging.StreamHandler, "flush", full)  # every log write fails
    monkeypatch.setattr(sys, "stdin", _Stdin(json.dumps(payload).encode()))
    assert main(["hook", "claude-code", "user-prompt", "--no-inject"]) == 0


class _Stdin:
    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)


async def _texts(db: Path) -> list[str]:
    store = await SQLiteStore.open(db)
    try:
        return [turn.text async for turn in store.iter_turns()]
    finally:
        await store.close()
