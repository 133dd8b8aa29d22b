"""`import` is all-or-nothing and bounded: every turn of the file is checked before any is
stored, errors name the file line or session, and files that never end (or expand to GiB)
are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from servers import LEXICAL_TOML, REPO, subprocess_env

from smartsearch_mcp.cli import main
from smartsearch_mcp.importers import json_files, read_sessions
from smartsearch_mcp.types import InputError


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "lexical.toml"
    config.write_text(LEXICAL_TOML + "[store]\nmax_text_chars = 1000\n")
    monkeypatch.setenv("SMARTSEARCH_DB", str(tmp_path / "memory.db"))
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    monkeypatch.delenv("SMARTSEARCH_NAMESPACE", raising=False)
    return tmp_path


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _turns_stored(env: Path, capsys: pytest.CaptureFixture[str]) -> int:
    capsys.readouterr()
    if not (env / "memory.db").exists():
        return 0
    assert main(["stats", "--json"]) == 0
    return int(json.loads(capsys.readouterr().out)["turns"])


GOOD = [{"text": f"fine turn {i}", "session_id": "a"} for i in range(3)]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"text": "x" * 1001, "session_id": "b"}, "line 5: text has 1001 characters"),
        ({"text": "hi", "speaker": "\ud800", "session_id": "b"}, "line 5: speaker is not valid"),
        ({"text": "hi", "speaker": "s" * 300, "session_id": "b"}, "line 5: speaker is longer"),
        ({"text": "hi", "session_id": "b\x07"}, "control characters"),
        ({"text": "hi", "namespace": "n\x01", "session_id": "b"}, "control characters"),
        ({"text": "\ud800 cut emoji", "session_id": "b"}, "line 5: text is not valid"),
    ],
)
def test_a_bad_turn_late_in_the_file_stores_nothing_and_names_its_line(env, capsys, bad, message):
    source = _jsonl(env / "in.jsonl", [*GOOD, {"text": "ok", "session_id": "b"}, bad])
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert message in err and "nothing was imported" in err and "Traceback" not in err
    assert _turns_stored(env, capsys) == 0


def test_nan_metadata_stores_nothing_and_names_its_line(env, capsys):
    source = env / "in.jsonl"
    source.write_text(
        json.dumps(GOOD[0]) + "\n" + '{"text": "x", "session_id": "b", "metadata": {"v": NaN}}\n'
    )
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "line 2: metadata is not valid JSON" in err
    assert _turns_stored(env, capsys) == 0


@pytest.mark.parametrize("where", ["line", "metadata"])
def test_deeply_nested_json_is_a_clear_error_not_a_traceback(env, capsys, where):
    source = env / "in.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    line = deep if where == "line" else '{"text": "x", "metadata": {"m": ' + deep + "}}"
    source.write_text(json.dumps(GOOD[0]) + "\n" + line + "\n")
    assert main(["import", str(source), "--format", "jsonl", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "line 2: JSON nested too deeply" in err and "Traceback" not in err
    assert _turns_stored(env, capsys) == 0


def test_a_session_of_other_formats_is_named_by_its_place_and_turn(env, capsys):
    conversation = {
        "title": "t",
        "uuid": "conv-1",
        "chat_messages": [
            {"sender": "human", "text": "short", "created_at": "2024-01-01T00:00:00Z"},
            {"sender": "assistant", "text": "y" * 1001, "created_at": "2024-01-01T00:00:01Z"},
        ],
    }
    source = env / "conversations.json"
    source.write_text(json.dumps([conversation]))
    assert main(["import", str(source), "--format", "claude", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "session 1" in err and "turn 2" in err and "1001 characters" in err, err
    assert _turns_stored(env, capsys) == 0


def _import_in_subprocess(env: Path, source: str, fmt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "smartsearch_mcp", "import", source, "--format", fmt,
         "--no-progress", "--db", str(env / "memory.db"), "--config", str(env / "lexical.toml")],
        capture_output=True, text=True, timeout=60, env=subprocess_env(), cwd=str(REPO),
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["jsonl", "chatgpt", "claude", "claude-code"])
def test_importing_from_dev_zero_is_refused_at_once(env, fmt):
    done = _import_in_subprocess(env, "/dev/zero", fmt)
    assert done.returncode == 1 and "not a regular file" in done.stderr, done.stderr


def test_importing_from_a_fifo_is_refused_without_waiting_for_a_writer(env):
    fifo = env / "pipe.jsonl"
    os.mkfifo(fifo)
    done = _import_in_subprocess(env, str(fifo), "jsonl")
    assert done.returncode == 1 and "not a regular file" in done.stderr, done.stderr


def test_a_zip_member_larger_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(json_files, "MAX_FILE_BYTES", 10_000)
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("conversations.json", "[" + " " * 50_000 + "]")
    assert archive.stat().st_size < 1000  # small on disk, large once uncompressed
    with pytest.raises(InputError, match="uncompressed"):
        list(read_sessions(archive, "chatgpt"))


def test_a_json_file_larger_than_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(json_files, "MAX_FILE_BYTES", 10_000)
    source = tmp_path / "conversations.json"
    source.write_text("[" + " " * 50_000 + "]")
    with pytest.raises(InputError, match="import limit"):
        list(read_sessions(source, "claude"))


def test_an_overlong_jsonl_line_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(json_files, "MAX_LINE_CHARS", 1000)
    source = _jsonl(tmp_path / "in.jsonl", [GOOD[0], {"text": "z" * 2000}, GOOD[1]])
    with pytest.raises(InputError, match="line 2 is longer than 1,000 characters"):
        list(read_sessions(source, "jsonl"))


def test_an_overlong_transcript_line_is_skipped_and_the_next_lines_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(json_files, "MAX_LINE_CHARS", 1000)

    def line(uuid: str, text: str) -> dict:
        return {"type": "user", "uuid": uuid, "sessionId": "s", "timestamp":
                "2024-01-01T00:00:00Z", "message": {"role": "user", "content": text}}  # fmt: skip

    source = _jsonl(tmp_path / "s.jsonl", [line("1", "before"), line("2", "z" * 5000),
                                           line("3", "after")])  # fmt: skip
    [imported] = list(read_sessions(source, "claude-code"))
    assert [t.text for t in imported.session.turns] == ["before", "after"]
